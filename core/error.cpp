#include "core/error.h"

namespace seg {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::runtime: return "error";
    case ErrorKind::usage: return "usage error";
    case ErrorKind::data: return "data error";
    case ErrorKind::device: return "device error";
  }
  return "error";
}

Error::Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) { render(); }

Error& Error::with(const std::string& field, const std::string& value) {
  for (auto& kv : context_) {
    if (kv.first == field) {
      kv.second = value;
      render();
      return *this;
    }
  }
  context_.emplace_back(field, value);
  render();
  return *this;
}

Error& Error::file(const std::string& path, long line) {
  return with("file", line >= 0 ? str(path, ":", line) : path);
}

std::string Error::context(const std::string& field) const {
  for (const auto& kv : context_)
    if (kv.first == field) return kv.second;
  return "";
}

void Error::render() {
  std::string out = std::string(error_kind_name(kind_)) + ": " + message_;
  for (const auto& kv : context_) out += "\n  " + kv.first + ": " + kv.second;
  rendered_ = std::move(out);
}

}  // namespace seg
