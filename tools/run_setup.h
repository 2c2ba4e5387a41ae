// What train, eval, predict and bench share: command-line flags common to them, and the
// translation of a Config into the data pipeline's and the model builder's options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/amp_policy.h"
#include "core/device.h"
#include "data/class_info.h"
#include "data/options.h"
#include "models/registry.h"
#include "tools/config.h"

namespace seg::cli {

// Flags every model command accepts (the rest are KEY VALUE overrides).
struct CommonFlags {
  std::string cfg_path;
  std::string gpus;          // --gpus 0-3 | 0,2 | gpu0 (upstream's forms)
  std::string device;        // --device cpu | cuda:N
  std::string amp;           // --amp O0..O3 (--apex = O1, --apex-opt-level X)
  std::string amp_dtype;     // --amp-dtype f16|bf16
  std::string loss_scale;    // --loss-scale dynamic|none|N
  std::string on_bad_sample; // --on-bad-sample fail|skip
  int threads = 0;           // --threads N (0 = all cores)
  bool no_tf32 = false;      // --no-tf32: strict f32 convolutions/GEMMs on CUDA (no effect on the CPU)
  std::string engine;        // --engine own|cublaslt|cudnn|auto: TRAIN.engine (CUDA only)
  bool deterministic = false; // --deterministic: TRAIN.deterministic (CUDA's library engines only)
  double comm_timeout = 0;   // --comm-timeout S: under mpirun, a collective waiting longer stops the run (0 = 300 s)
  // Not a flag: set by run_ranks (tools/ranks.h) on every rank but the first of a multi-GPU run,
  // so that the engine line ("cuda:0: engine own; ...") is printed once, not once per GPU.
  bool quiet_engine_line = false;
  std::vector<std::string> overrides;  // trailing KEY VALUE pairs
  std::vector<std::string> rest;       // command-specific flags, in order, for the command to parse
};

// Splits args into common flags, the command's own flags (those listed in `own_flags`, with
// `own_with_value` taking a value) and trailing KEY VALUE pairs. Unknown "--x" flags are usage errors.
CommonFlags parse_common_flags(const std::vector<std::string>& args, const std::vector<std::string>& own_flags,
                               const std::vector<std::string>& own_with_value);

// "300,375,450" (or "300") from --scales, checked, as the DATASET.imgSizes value "(300,375,450)";
// Error(usage) naming `flag` and the bad item otherwise.
std::string scales_override(const std::string& flag, const std::string& text);

// Applies the flags to the config (amp, loss scale, engine, deterministic) and loads it; sets the
// thread count.
Config load_run_config(const CommonFlags& flags);

// The device to run on: --gpus / --device; the CPU when neither is given. Asking for more than one
// GPU, for a GPU in a build without CUDA, or on a machine without one, is an Error naming the flag.
// On a CUDA device it also sets the process-wide kernel choices (kernels/cuda/engine.h): TF32
// (--no-tf32), the engine and determinism, from `cfg` (TRAIN.engine, TRAIN.deterministic, which
// load_run_config fills from --engine and --deterministic) or, before a config exists (the demo's
// early check), from the flags; then prints the one start-up line saying which kernels run. An
// unknown engine name is a usage error on every device; an engine this build or machine lacks is a
// device error (exit 4) naming it and why.
Device resolve_device(const CommonFlags& flags, const Config* cfg = nullptr);
// "0-3" -> {0,1,2,3}, "0,2" -> {0,2}, "gpu0" -> {0}; Error(usage) otherwise.
std::vector<int> parse_gpu_list(const std::string& text);

AmpConfig amp_config(const Config& cfg);
data::DatasetOptions dataset_options(const Config& cfg, const CommonFlags& flags);
ModelConfig model_config(const Config& cfg);

// Class names and palette for the dataset: DATASET.root_dataset/object<N>_info.csv and
// color<N>.csv when present (the synthetic dataset writes them), else the ADE20K files shipped in
// data/ade20k/ when num_class is 150; else generic names and a generated palette.
struct ClassTable {
  std::vector<std::string> names;     // short names, class k (0-based)
  std::vector<data::Rgb> palette;     // colour of class k
};
ClassTable load_class_table(const Config& cfg);

}  // namespace seg::cli
