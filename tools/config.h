// segtrain configuration: upstream's key tree (DIR, DATASET, MODEL, TRAIN, VAL, TEST) with upstream's
// defaults (spec section 1.1), plus segtrain's own keys in the same tree (DESIGN decision 10).
//
// Sources, applied in order: defaults -> a config file (our JSON, or upstream's YAML as it is) ->
// trailing "KEY VALUE" overrides (as upstream's `cfg.merge_from_list(opts)`). Unknown keys and wrong
// types are usage errors that name the key, the file or argument, and suggest the closest key.
// Values derived at run time (TRAIN.max_iters, the running LRs) are not user keys; they are written
// to the run's config dump next to the user keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace seg::cli {

struct Config {
  std::string DIR = "ckpt/ade20k-resnet50dilated-ppm_deepsup";
  struct {
    std::string root_dataset = "./data/";
    std::string list_train = "./data/training.odgt";
    std::string list_val = "./data/validation.odgt";
    int64_t num_class = 150;
    std::vector<int64_t> imgSizes = {300, 375, 450, 525, 600};
    int64_t imgMaxSize = 1000;
    int64_t padding_constant = 8;
    int64_t segm_downsampling_rate = 8;
    bool random_flip = true;
  } DATASET;
  struct {
    std::string arch_encoder = "resnet50dilated";
    std::string arch_decoder = "ppm_deepsup";
    std::string weights_encoder;
    std::string weights_decoder;
    int64_t fc_dim = 2048;
    double bn_momentum = 0.001;  // ours: upstream's SyncBN default; 0.1 suits short runs from scratch
  } MODEL;
  struct {
    int64_t batch_size_per_gpu = 2;
    int64_t num_epoch = 20;
    int64_t start_epoch = 0;
    int64_t epoch_iters = 5000;
    std::string optim = "SGD";
    double lr_encoder = 0.02;
    double lr_decoder = 0.02;
    double lr_pow = 0.9;
    double beta1 = 0.9;
    double weight_decay = 1e-4;
    double deep_sup_scale = 0.4;
    bool fix_bn = false;
    int64_t workers = 16;
    int64_t disp_iter = 20;
    int64_t seed = 304;
    // ours
    int64_t accum_steps = 1;          // gradient accumulation: one optimizer step per accum_steps batches
    std::string amp = "O0";           // mixed precision level (--amp)
    std::string amp_dtype = "f16";    // f16 or bf16 (--amp-dtype)
    std::string loss_scale;           // "" = the level's default, "dynamic", "none" or a number
    int64_t eval_every = 0;           // validate every N epochs (0 = never during training)
    int64_t bn_recalibrate_iters = 0; // re-estimate BN statistics over N batches before evaluation
    bool detect_anomaly = false;      // name the first op making inf/NaN (--detect-anomaly)
    // data parallel (docs/distributed.md)
    int64_t sub_batches_per_rank = 1; // sub-batches each rank runs per iteration, one after another
    bool sync_bn = true;              // BatchNorm statistics over all ranks (upstream's SyncBN)
    double bucket_mb = 25;            // gradient all-reduce bucket size
    std::string allreduce_dtype = "storage";  // gradients travel in their storage dtype, or "f32"
    // CUDA devices (no effect on the CPU): who computes convolutions and GEMMs (kernels/cuda/engine.h)
    std::string engine = "own";       // own | cublaslt | cudnn | auto (--engine)
    bool deterministic = false;       // the library engines choose deterministic algorithms only (--deterministic)
  } TRAIN;
  struct {
    int64_t batch_size = 1;
    bool visualize = false;
    std::string checkpoint = "epoch_20.pth";
    int64_t max_images = 0;  // ours: evaluate only the first N images (0 = all)
  } VAL;
  struct {
    int64_t batch_size = 1;
    std::string checkpoint = "epoch_20.pth";
    std::string result = "./";
  } TEST;

  // All user keys, dotted ("TRAIN.lr_encoder"), in schema order.
  static std::vector<std::string> keys();
  // Sets one key from text (as an override or a YAML scalar); `origin` names where it came from.
  void set(const std::string& key, const std::string& value, const std::string& origin);
  // The same for a JSON string value: taken exactly (no trimming, no quote stripping), so that a
  // config dumped with to_json() reads back to the same values.
  void set_exact(const std::string& key, const std::string& value, const std::string& origin);
  std::string get(const std::string& key) const;  // the value as text

  nlohmann::json to_json() const;
};

// Defaults + file (.json/.yaml/.yml) + overrides (pairs). Usage errors name the key and the source.
Config load_config(const std::string& path, const std::vector<std::string>& overrides);
// The same from text already in memory (`origin` names it in messages); ConfigFormat::none = no file.
enum class ConfigFormat { none, json, yaml };
Config load_config_text(const std::string& text, ConfigFormat format, const std::string& origin,
                        const std::vector<std::string>& overrides);

// Every user key with its type ("string", "integer", "number", "boolean", "integer list"), its
// default as text and one line on what it does; format_config_keys() is that table as
// `segtrain train --help-keys` prints it.
struct ConfigKeyInfo {
  std::string key, type, default_value, help;
};
std::vector<ConfigKeyInfo> config_key_table();
std::string format_config_keys();

// The closest known key to a misspelt one ("TRAIN.lr_encodr" -> "TRAIN.lr_encoder").
std::string closest_key(const std::string& key);

// Writes the config (and a "derived" object) as JSON, atomically.
void dump_config(const Config& cfg, const nlohmann::json& derived, const std::string& path);

// "epoch_20.pth" -> "encoder_epoch_20.safetensors" (DESIGN decision 10: VAL.checkpoint names).
std::string checkpoint_file(const std::string& checkpoint, const std::string& part);

}  // namespace seg::cli
