// DatasetOptions: everything the data pipeline reads from the config, as a plain struct.
//
// Field names are the upstream config keys (spec/upstream.md section 1), so the CLI fills them
// one to one: DATASET.* and TRAIN.batch_size_per_gpu / TRAIN.workers / TRAIN.seed. The few fields
// upstream does not have are ours and say so. Defaults are upstream's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seg::data {

// What to do with a sample that cannot be used (missing or corrupt file, image/label size mismatch,
// label value above num_class): stop with a data error (exit code 3), or skip it and count it.
enum class BadSamplePolicy { fail, skip };
BadSamplePolicy parse_bad_sample_policy(const std::string& text);  // "fail" | "skip"; Error(usage) otherwise
const char* bad_sample_policy_name(BadSamplePolicy policy);

struct DatasetOptions {
  // ---- DATASET.* ----
  std::string root_dataset = "./data/";
  std::string list_train = "./data/training.odgt";
  std::string list_val = "./data/validation.odgt";
  int num_class = 150;
  std::vector<int> imgSizes = {300, 375, 450, 525, 600};  // train: one per sub-batch; eval: all
  int imgMaxSize = 1000;
  int padding_constant = 8;
  int segm_downsampling_rate = 8;
  bool random_flip = true;  // honoured (upstream HEAD ignores it and always flips; DESIGN decision 12)

  // ---- TRAIN.* ----
  int batch_size_per_gpu = 2;
  int workers = 16;   // loader worker threads; 0 = decode on the calling thread
  uint64_t seed = 304;

  // ---- ours ----
  int num_gpus = 1;   // sub-batches per iteration (one per GPU or rank)
  // The sub-batches this process loads: [first_sub_batch, first_sub_batch + local_sub_batches) of
  // each iteration's num_gpus (data parallel: a rank loads only its own; -1 = all of them).
  int first_sub_batch = 0;
  int local_sub_batches = -1;
  int local_count() const { return local_sub_batches < 0 ? num_gpus : local_sub_batches; }
  int prefetch = 0;   // sub-batches decoded ahead of the consumer; 0 = 2 per worker (PyTorch's default)
  BadSamplePolicy on_bad_sample = BadSamplePolicy::fail;
  // upstream's parse_input_list slicing (eval_multipro): first max_sample, then [start_idx, end_idx)
  int64_t max_sample = -1;
  int64_t start_idx = -1;
  int64_t end_idx = -1;

  // Error(usage) naming the config key when a value cannot work.
  void validate() const;
  int prefetch_depth() const { return prefetch > 0 ? prefetch : 2 * (workers > 0 ? workers : 1); }
};

}  // namespace seg::data
