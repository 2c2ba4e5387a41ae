#include "tools/run_setup.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>

#include "core/comm.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/numbers.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cuda/engine.h"  // the engine names; the rest only in CUDA builds

namespace seg::cli {

namespace {
bool is_flag(const std::string& a) { return a.size() > 2 && a[0] == '-' && a[1] == '-'; }
bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }
}  // namespace

CommonFlags parse_common_flags(const std::vector<std::string>& args, const std::vector<std::string>& own_flags,
                               const std::vector<std::string>& own_with_value) {
  CommonFlags f;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw Error(ErrorKind::usage, args[i] + " needs a value").key(args[i]);
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--cfg") f.cfg_path = value(i);
    else if (a == "--gpus") f.gpus = value(i);
    else if (a == "--device") f.device = value(i);
    else if (a == "--amp") f.amp = value(i);
    else if (a == "--apex") f.amp = "O1";  // the upstream pull request's flag
    else if (a == "--apex-opt-level") f.amp = value(i);
    else if (a == "--amp-dtype") f.amp_dtype = value(i);
    else if (a == "--loss-scale") f.loss_scale = value(i);
    else if (a == "--on-bad-sample") f.on_bad_sample = value(i);
    else if (a == "--skip-bad") f.on_bad_sample = "skip";
    else if (a == "--no-tf32") f.no_tf32 = true;
    else if (a == "--engine") f.engine = value(i);
    else if (a == "--deterministic") f.deterministic = true;
    else if (a == "--comm-timeout") {
      f.comm_timeout = static_cast<double>(int_flag("--comm-timeout", value(i), 1, 86400));
    } else if (a == "--threads") {
      f.threads = static_cast<int>(int_flag("--threads", value(i), 1, 4096));
    } else if (contains(own_with_value, a)) {
      f.rest.push_back(a);
      f.rest.push_back(value(i));
    } else if (contains(own_flags, a)) {
      f.rest.push_back(a);
    } else if (is_flag(a)) {
      throw Error(ErrorKind::usage, "unknown option '" + a + "'").key(a).hint("see --help for the options");
    } else {
      f.overrides.push_back(a);  // KEY VALUE pairs
    }
  }
  return f;
}

std::string scales_override(const std::string& flag, const std::string& text) {
  std::string out = "(";
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out += std::to_string(int_flag(flag, item, 1, 100000)) + ",";
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out + ")";
}

Config load_run_config(const CommonFlags& flags) {
  std::vector<std::string> overrides = flags.overrides;
  if (!flags.amp.empty()) overrides.insert(overrides.end(), {"TRAIN.amp", flags.amp});
  if (!flags.amp_dtype.empty()) overrides.insert(overrides.end(), {"TRAIN.amp_dtype", flags.amp_dtype});
  if (!flags.loss_scale.empty()) overrides.insert(overrides.end(), {"TRAIN.loss_scale", flags.loss_scale});
  if (!flags.engine.empty()) overrides.insert(overrides.end(), {"TRAIN.engine", flags.engine});
  if (flags.deterministic) overrides.insert(overrides.end(), {"TRAIN.deterministic", "true"});
  Config cfg = load_config(flags.cfg_path, overrides);
  if (flags.threads > 0) set_num_threads(flags.threads);
  if (flags.comm_timeout > 0) world().set_timeout_seconds(flags.comm_timeout);
  return cfg;
}

std::vector<int> parse_gpu_list(const std::string& text) {
  auto number = [&](const std::string& s) {
    std::string t = s;
    if (t.rfind("gpu", 0) == 0) t = t.substr(3);
    if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw Error(ErrorKind::usage, "bad GPU list '" + text + "'").key("--gpus").hint("use forms like 0, 0-3, 0,2 or gpu0");
    const std::optional<int64_t> v = parse_int64(t);
    if (!v || *v > 1023) throw Error(ErrorKind::usage, "bad GPU index in '" + text + "'").key("--gpus").hint("GPU indices are 0..1023");
    return static_cast<int>(*v);
  };
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = part.find('-');
    if (dash != std::string::npos) {
      const int lo = number(part.substr(0, dash)), hi = number(part.substr(dash + 1));
      if (hi < lo) throw Error(ErrorKind::usage, "bad GPU range '" + part + "'").key("--gpus");
      for (int g = lo; g <= hi; ++g) out.push_back(g);
    } else {
      out.push_back(number(part));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

// The engine a run asks for, and which setting named it (for the message if it is wrong).
struct EngineRequest {
  cuda::Engine engine = cuda::Engine::own;
  std::string key = "TRAIN.engine";
  bool deterministic = false;
};

EngineRequest engine_request(const CommonFlags& flags, const Config* cfg) {
  EngineRequest r;
  std::string name = "own";
  if (cfg != nullptr) {
    name = cfg->TRAIN.engine;
    r.deterministic = cfg->TRAIN.deterministic;
  } else {
    if (!flags.engine.empty()) name = flags.engine;
    r.deterministic = flags.deterministic;
  }
  if (!flags.engine.empty()) r.key = "--engine";  // the flag overrides the config key
  // Parsed on every device and in every build, so a typo fails before a long CPU run starts.
  try {
    r.engine = cuda::parse_engine(name);
  } catch (const std::invalid_argument&) {
    throw Error(ErrorKind::usage, "unknown engine '" + name + "'")
        .key(r.key)
        .hint("choose own (the project's kernels), cublaslt, cudnn or auto");
  }
  return r;
}

}  // namespace

Device resolve_device(const CommonFlags& flags, const Config* cfg) {
  if (!flags.gpus.empty() && !flags.device.empty())
    throw Error(ErrorKind::usage, "give either --gpus or --device, not both").key("--gpus");
  const EngineRequest engine = engine_request(flags, cfg);
  Device dev = Device::cpu();
  if (!flags.gpus.empty()) {
    const std::vector<int> gpus = parse_gpu_list(flags.gpus);
    // Several GPUs: train, eval and predict give each a thread (tools/ranks.h) and resolve each
    // one alone; every other command runs on one device.
    if (gpus.size() > 1)
      throw Error(ErrorKind::usage, str("--gpus ", flags.gpus, ": ", gpus.size(),
                                        " GPUs are for segtrain train, eval and predict (one thread per GPU); this command uses one"))
          .key("--gpus")
          .hint("give one GPU, e.g. --gpus 0 or --device cuda:0");
    dev = Device::cuda(gpus[0]);
  } else if (!flags.device.empty()) {
    dev = Device::parse(flags.device);
  }
  require_device(dev);
#ifdef SEG_WITH_CUDA
  // TF32 for f32 convolutions and GEMMs is on by default, as in PyTorch (kernels/cuda/engine.h);
  // the start-up line says which kernels f32 runs on.
  if (dev.is_cuda()) {
    try {
      cuda::set_engine(engine.engine);
    } catch (const cuda::EngineUnavailable& e) {
      // The simulated build has no library engines; an nvcc build may lack cuDNN.
      throw Error(ErrorKind::device, e.what()).key(engine.key).hint("use --engine own (the project's kernels) or auto");
    }
    cuda::set_deterministic(engine.deterministic);
    cuda::set_allow_tf32(!flags.no_tf32);
    // Once per process and setting: the demo resolves the device for training and again for eval.
    // (Threads of a multi-GPU run resolve their devices at once, hence the lock.)
    static std::mutex mutex;
    static std::string said;
    const std::string line = dev.str() + ": " + cuda::describe_engines();
    std::lock_guard<std::mutex> lock(mutex);
    if (!flags.quiet_engine_line && line != said) {
      std::printf("%s\n", line.c_str());
      said = line;
    }
  }
#endif
  return dev;
}

AmpConfig amp_config(const Config& cfg) {
  return make_amp_config(cfg.TRAIN.amp, cfg.TRAIN.amp_dtype, cfg.TRAIN.loss_scale);
}

data::DatasetOptions dataset_options(const Config& cfg, const CommonFlags& flags) {
  data::DatasetOptions o;
  o.root_dataset = cfg.DATASET.root_dataset;
  o.list_train = cfg.DATASET.list_train;
  o.list_val = cfg.DATASET.list_val;
  o.num_class = static_cast<int>(cfg.DATASET.num_class);
  o.imgSizes.assign(cfg.DATASET.imgSizes.begin(), cfg.DATASET.imgSizes.end());
  o.imgMaxSize = static_cast<int>(cfg.DATASET.imgMaxSize);
  o.padding_constant = static_cast<int>(cfg.DATASET.padding_constant);
  o.segm_downsampling_rate = static_cast<int>(cfg.DATASET.segm_downsampling_rate);
  o.random_flip = cfg.DATASET.random_flip;
  o.batch_size_per_gpu = static_cast<int>(cfg.TRAIN.batch_size_per_gpu);
  o.workers = static_cast<int>(cfg.TRAIN.workers);
  o.seed = static_cast<uint64_t>(cfg.TRAIN.seed);
  if (!flags.on_bad_sample.empty()) o.on_bad_sample = data::parse_bad_sample_policy(flags.on_bad_sample);
  if (cfg.VAL.max_images > 0) o.max_sample = cfg.VAL.max_images;
  o.validate();
  return o;
}

ModelConfig model_config(const Config& cfg) {
  ModelConfig m;
  m.arch_encoder = cfg.MODEL.arch_encoder;
  m.arch_decoder = cfg.MODEL.arch_decoder;
  m.fc_dim = cfg.MODEL.fc_dim;
  m.num_class = cfg.DATASET.num_class;
  m.deep_sup_scale = cfg.TRAIN.deep_sup_scale;
  m.bn_momentum = cfg.MODEL.bn_momentum;
  m.seed = static_cast<uint64_t>(cfg.TRAIN.seed);
  return m;
}

ClassTable load_class_table(const Config& cfg) {
  const int64_t n = cfg.DATASET.num_class;
  ClassTable t;
  const std::string root = cfg.DATASET.root_dataset;
  const std::string info = root + "/object" + std::to_string(n) + "_info.csv";
  const std::string colors = root + "/color" + std::to_string(n) + ".csv";
  const std::string ade = std::string(SEG_DATA_DIR) + "/ade20k/";
  if (file_exists(info)) {
    for (const auto& c : data::read_class_info_csv(info)) t.names.push_back(c.short_name());
  } else if (n == 150 && file_exists(ade + "object150_info.csv")) {
    for (const auto& c : data::read_class_info_csv(ade + "object150_info.csv")) t.names.push_back(c.short_name());
  }
  if (file_exists(colors)) t.palette = data::read_palette_csv(colors);
  else if (n == 150 && file_exists(ade + "color150.csv")) t.palette = data::read_palette_csv(ade + "color150.csv");
  t.names.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    if (t.names[k].empty()) t.names[k] = "class " + std::to_string(k);
  // Missing colours: a deterministic spread over the hue circle.
  for (int64_t k = static_cast<int64_t>(t.palette.size()); k < n; ++k) {
    const uint32_t h = static_cast<uint32_t>(k) * 2654435761u;
    t.palette.push_back(data::Rgb{static_cast<uint8_t>(64 + (h >> 8) % 192), static_cast<uint8_t>(64 + (h >> 16) % 192),
                                  static_cast<uint8_t>(64 + (h >> 24) % 192)});
  }
  return t;
}

}  // namespace seg::cli
