#include "tools/checkpoint_set.h"

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/numbers.h"

namespace seg::cli {

namespace {
std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

int64_t epoch_of_checkpoint_file(const std::string& name) {
  for (const char* prefix : {"encoder_epoch_", "decoder_epoch_"}) {
    const std::string p = prefix, suffix = ".safetensors";
    if (name.size() <= p.size() + suffix.size() || name.compare(0, p.size(), p) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::optional<int64_t> n = parse_int64(name.substr(p.size(), name.size() - p.size() - suffix.size()));
    if (n && *n >= 0) return *n;
  }
  return -1;
}

void CheckpointSet::set_epoch_files(int64_t epoch, const FileDigest& encoder, const FileDigest& decoder) {
  for (auto it = files.begin(); it != files.end();) it = epoch_of_checkpoint_file(it->first) >= 0 ? files.erase(it) : std::next(it);
  files["encoder_epoch_" + std::to_string(epoch) + ".safetensors"] = encoder;
  files["decoder_epoch_" + std::to_string(epoch) + ".safetensors"] = decoder;
}

std::string CheckpointSet::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, d] : files) j[name] = {{"bytes", d.bytes}, {"hash", hex(d.hash)}};
  return j.dump();
}

CheckpointSet CheckpointSet::from_json(const std::string& text, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::data, "train state: malformed checkpoint set (" + why + ")")
        .file(path)
        .hint("the train state is damaged; train again, or remove its checkpoint_set entry with a safetensors tool");
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  CheckpointSet set;
  for (const auto& [name, v] : j.items()) {
    if (!v.is_object() || !v.contains("bytes") || !v["bytes"].is_number_unsigned() || !v.contains("hash") ||
        !v["hash"].is_string())
      throw bad("entry '" + name + "'");
    const std::string h = v["hash"].get<std::string>();
    char* end = nullptr;
    const unsigned long long hash = std::strtoull(h.c_str(), &end, 16);
    if (h.size() != 16 || *end) throw bad("hash of '" + name + "'");
    set.files[name] = FileDigest{v["bytes"].get<uint64_t>(), hash};
  }
  return set;
}

std::vector<std::string> check_checkpoint_set(const std::string& dir, const CheckpointSet& set, int64_t epochs_done) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  for (const auto& [name, committed] : set.files) {
    const std::string path = dir + "/" + name;
    if (!file_exists(path)) {
      notes.push_back(name + " is missing (the train state committed it)" +
                      (name == "history.json" ? std::string("; the history restarts empty") : std::string()));
      continue;
    }
    FileDigest now;
    try {
      now = file_digest(path);
    } catch (const Error& e) {
      notes.push_back(name + " cannot be read: " + e.message());
      continue;
    }
    if (now == committed) continue;
    if (name == "history.json")
      notes.push_back("history.json is newer than the train state (a save that did not complete); its rows after the "
                      "resumed step are dropped");
    else
      notes.push_back(name + " is not the file the train state committed (" + std::to_string(now.bytes) + " bytes, " +
                      std::to_string(committed.bytes) + " committed): it was rewritten by a save that did not complete, "
                      "or changed by hand; training rewrites it when it gets there again");
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const int64_t epoch = epoch_of_checkpoint_file(name);
    if (epoch > epochs_done && !set.files.count(name))
      notes.push_back(name + " was written by a save that did not complete (no train state names it); it is ignored, "
                             "and rewritten at the end of epoch " + std::to_string(epoch));
  }
  return notes;
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || !entry.is_regular_file(ec)) continue;
    // <name>.tmp.<pid> (core/fileio) or <name>.tmp.<pid>.<n> (data/file_io)
    std::string rest = name.substr(at + 5);
    const size_t dot = rest.find('.');
    if (dot != std::string::npos) rest = rest.substr(0, dot);
    const std::optional<int64_t> pid = parse_int64(rest);
    if (!pid || *pid <= 0) continue;
    const bool alive = ::kill(static_cast<pid_t>(*pid), 0) == 0 || errno == EPERM;
    if (alive) continue;
    if (fs::remove(entry.path(), ec)) removed.push_back(name);
  }
  return removed;
}

}  // namespace seg::cli
