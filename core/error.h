// One error type for every failure a user or a caller can cause.
//
// An Error carries a kind (which maps to the process exit code of DESIGN "Errors and bad input"),
// a message that says what went wrong and what to do, and optional context: the file and line of
// the input, the config key, the op, dtype and shape involved. what() renders all of it, e.g.
//
//   data error: label value 151 is above num_class 150
//     file: data/ade/annotations/x.png
//     what to do: check DATASET.num_class or the label file
//
// Throw with SEG_FAIL / SEG_CHECK; the CLI catches Error at the top and exits with exit_code().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace seg {

enum class ErrorKind {
  runtime = 1,  // a failure inside the program (a bug, an I/O error)
  usage = 2,    // bad command line or config
  data = 3,     // bad dataset, image, label or checkpoint content
  device = 4,   // no GPU, out of memory, device op missing
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message);

  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }
  const std::string& message() const { return message_; }
  const char* what() const noexcept override { return rendered_.c_str(); }

  // Context, added as the error travels up. Each returns *this so calls chain.
  Error& with(const std::string& field, const std::string& value);
  Error& file(const std::string& path, long line = -1);
  Error& key(const std::string& k) { return with("key", k); }
  Error& op(const std::string& o) { return with("op", o); }
  Error& hint(const std::string& h) { return with("what to do", h); }

  // Value of a context field, "" when absent (used by tests).
  std::string context(const std::string& field) const;

 private:
  void render();
  ErrorKind kind_;
  std::string message_;
  std::vector<std::pair<std::string, std::string>> context_;
  std::string rendered_;
};

// str(a, b, c): concatenate anything that has operator<<.
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace seg

#define SEG_FAIL(kind, ...) throw ::seg::Error(::seg::ErrorKind::kind, ::seg::str(__VA_ARGS__))

// SEG_CHECK(cond, kind, message parts...): throws Error(kind) when cond is false.
#define SEG_CHECK(cond, kind, ...)   \
  do {                               \
    if (!(cond)) SEG_FAIL(kind, __VA_ARGS__); \
  } while (0)

// Internal invariant: a failure is a bug in segtrain, reported as a runtime error with the location.
#define SEG_ASSERT(cond, ...)                                                               \
  do {                                                                                      \
    if (!(cond))                                                                            \
      SEG_FAIL(runtime, "internal error at ", __FILE__, ":", __LINE__, ": ", #cond __VA_OPT__(, " ", ) __VA_ARGS__); \
  } while (0)
