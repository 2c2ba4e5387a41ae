#include "data/options.h"

#include "core/error.h"

namespace seg::data {

BadSamplePolicy parse_bad_sample_policy(const std::string& text) {
  if (text == "fail") return BadSamplePolicy::fail;
  if (text == "skip") return BadSamplePolicy::skip;
  throw Error(ErrorKind::usage, str("unknown bad-sample policy '", text, "'")).hint("use 'fail' or 'skip'");
}

const char* bad_sample_policy_name(BadSamplePolicy policy) {
  return policy == BadSamplePolicy::skip ? "skip" : "fail";
}

void DatasetOptions::validate() const {
  auto bad = [](const char* key, const std::string& why, const std::string& hint) {
    return Error(ErrorKind::usage, str(key, " ", why)).key(key).hint(hint);
  };
  if (num_class < 1 || num_class > 255)
    throw bad("DATASET.num_class", str("must be 1..255 (labels are 8-bit PNGs), got ", num_class),
              "set it to the number of classes of the dataset");
  if (imgSizes.empty()) throw bad("DATASET.imgSizes", "is empty", "give at least one short-side size, e.g. (300,)");
  for (int s : imgSizes)
    if (s <= 0) throw bad("DATASET.imgSizes", str("has the non-positive size ", s), "use sizes in pixels, e.g. 300");
  if (imgMaxSize <= 0)
    throw bad("DATASET.imgMaxSize", str("must be positive, got ", imgMaxSize), "e.g. 1000");
  if (segm_downsampling_rate <= 0)
    throw bad("DATASET.segm_downsampling_rate", str("must be positive, got ", segm_downsampling_rate),
              "8 for dilated encoders, 4 for UPerNet/HRNet");
  if (padding_constant <= 0 || padding_constant % segm_downsampling_rate != 0)
    throw bad("DATASET.padding_constant",
              str("must be a positive multiple of DATASET.segm_downsampling_rate (", segm_downsampling_rate,
                  "), got ", padding_constant),
              "upstream uses 8 with rate 8, and 32 with rate 4");
  if (batch_size_per_gpu < 1)
    throw bad("TRAIN.batch_size_per_gpu", str("must be at least 1, got ", batch_size_per_gpu), "e.g. 2");
  if (workers < 0) throw bad("TRAIN.workers", str("must be 0 or more, got ", workers), "0 decodes on the main thread");
  if (num_gpus < 1) throw bad("num_gpus", str("must be at least 1, got ", num_gpus), "one sub-batch per GPU");
  if (first_sub_batch < 0 || first_sub_batch + local_count() > num_gpus || local_count() < 1)
    throw bad("local_sub_batches", str("sub-batches [", first_sub_batch, ", ", first_sub_batch + local_count(), ") of ",
                                       num_gpus, " per iteration"),
              "a rank loads a non-empty part of each iteration's sub-batches");
  if (prefetch < 0) throw bad("prefetch", str("must be 0 (automatic) or more, got ", prefetch), "e.g. 4");
}

}  // namespace seg::data
