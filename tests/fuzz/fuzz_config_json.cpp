// Fuzz target: JSON configs with KEY VALUE overrides (tools/config.h; input layout in
// fuzz_config_common.h).
#include "tests/fuzz/fuzz_config_common.h"

namespace seg::fuzz {
int config_json(const uint8_t* data, size_t size) { return config_input(data, size, cli::ConfigFormat::json, "config_json"); }
}  // namespace seg::fuzz

SEG_FUZZ_ENTRY(config_json)
