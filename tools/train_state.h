// DIR/train_state.safetensors: what --resume needs for an exact continuation, and the commit record
// of the run's checkpoint set (tools/checkpoint_set.h). Written last by every save, atomically.
//
// Tensors: "model.<name>" (parameters and buffers, in memory layout), "optimizer.<encoder|decoder>.<i>
// .momentum|.master" (SGD momentum, fp32 master weights under O2/O3). Metadata (strings):
//   format        "segtrain train state 2" (1: the first version, without config and set)
//   step          optimizer steps completed
//   config        the run's config as JSON (what resume compares with: tools/resume_check.h)
//   checkpoint_set  the files this save committed, with sizes and hashes
//   best_miou     best validation mIoU so far (-1: none), so a resumed run keeps the right *_best
//   loss_scale, loss_scale_clean_steps, loss_scale_skipped, rng_seed, rng_streams
//   sub_batches   of each loader iteration: ranks x TRAIN.sub_batches_per_rank
//   ranks         the ranks (MPI processes or GPUs) that trained it; with TRAIN.sync_bn (in config)
//                 BatchNorm's statistics span that many sub-batches (tools/resume_check.h)
//   arch_encoder, arch_decoder, num_class, amp, accum_steps   (format 1's checks, kept for old readers)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/loss_scaler.h"
#include "core/optim.h"
#include "core/safetensors.h"
#include "models/segmentation_module.h"
#include "tools/checkpoint_set.h"
#include "tools/config.h"

namespace seg::cli {

struct TrainStateMeta {
  int format = 1;
  int64_t step = 0;
  double best_miou = -1;
  std::optional<Config> config;  // format 2
  CheckpointSet set;             // format 2 (empty for format 1)
  std::map<std::string, std::string> metadata;  // every entry, as written
};

FileDigest save_train_state(const std::string& path, const SegmentationModule& model, SGD& encoder, SGD& decoder,
                            const LossScaler& scaler, int64_t step, const Config& cfg, double best_miou,
                            const CheckpointSet& set, int64_t sub_batches = 1, int64_t ranks = 1);
// sub_batches: of each loader iteration, ranks x TRAIN.sub_batches_per_rank (what the data order
// depends on besides the config; a resume must use the same number, on any number of ranks unless
// SyncBN ties the run to its number of ranks). ranks: comm.size() of the run.

// Reads the file; Error(usage) when it does not exist (resume of a run that never saved), Error(data)
// when it is not a train state.
SafetensorsFile read_train_state(const std::string& path);
TrainStateMeta train_state_meta(const SafetensorsFile& file, const std::string& path);

// Copies weights, optimizer state, loss scale and RNG into the run. Every tensor is checked (name,
// shape, dtype) against the model: Error(data) naming the tensor and the file.
void restore_train_state(const SafetensorsFile& file, const std::string& path, SegmentationModule& model, SGD& encoder,
                         SGD& decoder, LossScaler& scaler);

}  // namespace seg::cli
