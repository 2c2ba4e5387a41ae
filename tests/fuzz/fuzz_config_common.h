// What the two config fuzz targets share: the input is the config text, then (after the first NUL
// byte) KEY VALUE override tokens separated by NUL bytes, as a command line would give them. An
// accepted config must survive its own dump: to_json() read back as JSON is the same config (the
// run's config.json and the train state's record rely on it; a value that is not UTF-8 must have been
// refused), and every key renders.
#pragma once

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tools/config.h"

namespace seg::fuzz {

inline int config_input(const uint8_t* data, size_t size, cli::ConfigFormat format, const char* target) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string text = all.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    size_t start = nul + 1;
    for (;;) {
      const size_t next = all.find('\0', start);
      overrides.push_back(all.substr(start, next == std::string::npos ? std::string::npos : next - start));
      if (next == std::string::npos) break;
      start = next + 1;
    }
  }
  try {
    const cli::Config cfg = cli::load_config_text(text, format, "fuzz", overrides);
    for (const std::string& key : cli::Config::keys()) (void)cfg.get(key);
    // Every accepted value is UTF-8 (tools/config.cpp refuses others), so the dump cannot throw.
    const nlohmann::json dumped = cfg.to_json();
    const std::string round = dumped.dump();
    const cli::Config again = cli::load_config_text(round, cli::ConfigFormat::json, "fuzz round trip", {});
    if (again.to_json() != dumped) property_failed(target, "to_json() does not read back to the same config: " + round);
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace seg::fuzz
