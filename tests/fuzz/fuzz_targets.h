// The bodies of the libFuzzer targets (one per file in this folder). Each takes one input and
// returns 0; an input segtrain must reject comes back as seg::Error (caught inside), and anything
// else that escapes (another exception, a crash, a leak, undefined behaviour, a failed round-trip
// check, which aborts) is a bug. The fuzz build (tools/fuzz.sh, SEG_FUZZ=ON with clang) wraps each in
// LLVMFuzzerTestOneInput; the normal build replays the seed corpora and every input that ever
// crashed a target through the same functions (test_fuzz_replay).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace seg::fuzz {

int odgt(const uint8_t* data, size_t size);         // data/odgt.h parse_odgt
int config_json(const uint8_t* data, size_t size);  // tools/config.h, JSON text + KEY VALUE overrides
int config_yaml(const uint8_t* data, size_t size);  // tools/config.h, YAML text + KEY VALUE overrides
int safetensors(const uint8_t* data, size_t size);  // core/safetensors.h parse_safetensors
int npy(const uint8_t* data, size_t size);          // core/npy.h parse_npy
int image(const uint8_t* data, size_t size);        // data/image_codec.h: label PNGs and JPEG/PNG photos

struct Target {
  const char* name;  // the folder of its corpus and regression inputs
  int (*run)(const uint8_t*, size_t);
};
inline const std::vector<Target>& targets() {
  static const std::vector<Target> list = {{"odgt", odgt},       {"config_json", config_json}, {"config_yaml", config_yaml},
                                           {"safetensors", safetensors}, {"npy", npy},    {"image", image}};
  return list;
}

// Aborts with a message: a property every accepted input must have does not hold.
[[noreturn]] inline void property_failed(const char* target, const std::string& what) {
  std::fprintf(stderr, "fuzz target %s: property failed: %s\n", target, what.c_str());
  std::abort();
}

}  // namespace seg::fuzz

// One fuzz target per executable: fuzz_<name>.cpp defines its body and, in the fuzz build, the
// libFuzzer entry point.
#ifdef SEG_FUZZ_MAIN
#define SEG_FUZZ_ENTRY(fn)                                                      \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {     \
    return ::seg::fuzz::fn(data, size);                                         \
  }
#else
#define SEG_FUZZ_ENTRY(fn)
#endif
