// --resume: is this the same run? The train state records the config the run was saved with
// (tools/train_state.h); a resume with a config that changes what is being trained would silently
// continue a different training, so it is refused with every difference named, or, with --force,
// allowed with one warning line per difference.
//
// The keys that define a run (resume_defining_keys):
//   model          MODEL.arch_encoder, MODEL.arch_decoder, MODEL.fc_dim, DATASET.num_class
//   batch          TRAIN.batch_size_per_gpu, TRAIN.accum_steps
//   schedule       TRAIN.lr_encoder, TRAIN.lr_decoder, TRAIN.lr_pow, TRAIN.epoch_iters, TRAIN.beta1,
//                  TRAIN.weight_decay
//   image sizes    DATASET.imgSizes, DATASET.imgMaxSize
//   precision      TRAIN.amp, TRAIN.amp_dtype, TRAIN.loss_scale
// Besides the keys, two numbers of the run (train-state metadata) define it:
//   sub-batches per step  ranks x TRAIN.sub_batches_per_rank: the data order depends on it
//   BatchNorm ranks       with TRAIN.sync_bn true, BatchNorm's statistics span the sub-batches of all
//                         ranks (SyncBN), so the number of ranks is part of the training: 2 ranks of
//                         2 images normalise over 4 images, 1 process with 2 sub-batches over 2. The
//                         value is the number of ranks whose sub-batches one BatchNorm normalises
//                         together: ranks under SyncBN, 1 without (or on one rank). A SyncBN run resumed
//                         on another number of ranks, or with TRAIN.sync_bn switched, would silently
//                         train differently, so it is refused like a changed key (--force: a warning).
//                         A state written before the train state recorded "ranks" is not checked.
// Every other key may change on a resume, notably TRAIN.num_epoch (raising it extends a finished run:
// training continues at the saved step with the learning rate of the longer schedule), TRAIN.workers,
// TRAIN.disp_iter, TRAIN.eval_every and the VAL/TEST keys.
#pragma once

#include <string>
#include <vector>

#include "tools/config.h"
#include "tools/train_state.h"

namespace seg::cli {

const std::vector<std::string>& resume_defining_keys();

struct ConfigDifference {
  std::string key;
  std::string saved;  // the value the run was saved with
  std::string now;    // the value of this invocation
};

// The defining keys whose value differs between the state's config and `now`, in the order above.
// A format-1 state (no config) is compared on what it recorded: architectures, num_class, AMP and
// accumulation.
// `sub_batches` (ranks x TRAIN.sub_batches_per_rank) is compared with the state's (1 when it has
// none): the data order depends on it. `ranks` matters only through SyncBN (above).
std::vector<ConfigDifference> resume_differences(const TrainStateMeta& state, const Config& now, int64_t sub_batches = 1,
                                                 int64_t ranks = 1);

// How many ranks' sub-batches one BatchNorm normalises together: `ranks` under TRAIN.sync_bn, else 1.
int64_t batch_norm_ranks(bool sync_bn, int64_t ranks);

// No differences: nothing. Otherwise Error(usage, exit 2) listing each "KEY: saved -> now", or with
// `force` one "warning:" line per difference on stderr.
void check_resume_differences(const std::vector<ConfigDifference>& diffs, bool force, const std::string& state_path);

}  // namespace seg::cli
