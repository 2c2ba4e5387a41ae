#include "tools/resume_check.h"

#include <charconv>
#include <cstdio>

#include "core/error.h"

namespace seg::cli {

const std::vector<std::string>& resume_defining_keys() {
  static const std::vector<std::string> keys = {
      "MODEL.arch_encoder",      "MODEL.arch_decoder",  "MODEL.fc_dim",        "DATASET.num_class",
      "TRAIN.batch_size_per_gpu", "TRAIN.accum_steps",   "TRAIN.lr_encoder",    "TRAIN.lr_decoder",
      "TRAIN.lr_pow",            "TRAIN.epoch_iters",   "TRAIN.beta1",         "TRAIN.weight_decay",
      "DATASET.imgSizes",        "DATASET.imgMaxSize",  "TRAIN.amp",           "TRAIN.amp_dtype",
      "TRAIN.loss_scale",
  };
  return keys;
}

int64_t batch_norm_ranks(bool sync_bn, int64_t ranks) { return sync_bn && ranks > 1 ? ranks : 1; }

namespace {
// The difference SyncBN makes, if the state recorded its ranks (states written before it did are
// not checked: nothing says how many ranks trained them).
void compare_batch_norm_ranks(const TrainStateMeta& state, const Config& now, int64_t ranks,
                              std::vector<ConfigDifference>& out) {
  const auto it = state.metadata.find("ranks");
  int64_t saved_ranks = 0;
  if (it == state.metadata.end()) return;
  const char* end = it->second.data() + it->second.size();
  if (std::from_chars(it->second.data(), end, saved_ranks).ptr != end || saved_ranks < 1) return;  // unreadable: as absent
  const int64_t saved = batch_norm_ranks(state.config->TRAIN.sync_bn, saved_ranks);
  const int64_t current = batch_norm_ranks(now.TRAIN.sync_bn, ranks);
  if (saved == current) return;
  auto said = [](int64_t group, bool sync_bn, int64_t n) {
    return std::to_string(group) + " (TRAIN.sync_bn " + (sync_bn ? "true" : "false") + ", " + std::to_string(n) +
           (n == 1 ? " rank)" : " ranks)");
  };
  out.push_back({"BatchNorm ranks (SyncBN normalises over every rank's sub-batch; 1 = each sub-batch alone)",
                 said(saved, state.config->TRAIN.sync_bn, saved_ranks), said(current, now.TRAIN.sync_bn, ranks)});
}
}  // namespace

std::vector<ConfigDifference> resume_differences(const TrainStateMeta& state, const Config& now, int64_t sub_batches,
                                                 int64_t ranks) {
  std::vector<ConfigDifference> out;
  if (state.config) {
    for (const std::string& key : resume_defining_keys()) {
      const std::string saved = state.config->get(key), current = now.get(key);
      if (saved != current) out.push_back({key, saved, current});
    }
    const auto it = state.metadata.find("sub_batches");
    const std::string saved = it == state.metadata.end() ? "1" : it->second, current = std::to_string(sub_batches);
    if (saved != current)
      out.push_back({"sub-batches per step (MPI ranks x TRAIN.sub_batches_per_rank)", saved, current});
    compare_batch_norm_ranks(state, now, ranks, out);
    return out;
  }
  // Format 1 recorded only these.
  auto compare = [&](const char* meta_key, const std::string& config_key, const std::string& current) {
    const auto it = state.metadata.find(meta_key);
    if (it != state.metadata.end() && it->second != current) out.push_back({config_key, it->second, current});
  };
  compare("arch_encoder", "MODEL.arch_encoder", now.MODEL.arch_encoder);
  compare("arch_decoder", "MODEL.arch_decoder", now.MODEL.arch_decoder);
  compare("num_class", "DATASET.num_class", std::to_string(now.DATASET.num_class));
  compare("amp", "TRAIN.amp/TRAIN.amp_dtype", now.TRAIN.amp + "/" + now.TRAIN.amp_dtype);
  compare("accum_steps", "TRAIN.accum_steps", std::to_string(now.TRAIN.accum_steps));
  return out;
}

namespace {
std::string shown(const std::string& v) { return v.empty() ? "''" : v; }
}  // namespace

void check_resume_differences(const std::vector<ConfigDifference>& diffs, bool force, const std::string& state_path) {
  if (diffs.empty()) return;
  if (force) {
    for (const auto& d : diffs)
      std::fprintf(stderr, "segtrain: warning: --resume --force: %s changed from %s (the run) to %s; the result will "
                           "differ from an uninterrupted run\n",
                   d.key.c_str(), shown(d.saved).c_str(), shown(d.now).c_str());
    return;
  }
  std::string list;
  for (const auto& d : diffs) list += "\n    " + d.key + ": " + shown(d.saved) + " (the run) -> " + shown(d.now) + " (now)";
  throw Error(ErrorKind::usage, str("--resume with a config that changes the run in ", diffs.size(),
                                    diffs.size() == 1 ? " key:" : " keys:", list))
      .key(diffs[0].key)
      .file(state_path)
      .hint("resume with the run's values (DIR/config.json holds them, and its \"ranks\" the number of ranks), "
            "train in a new DIR, or add --force to continue with the new values anyway");
}

}  // namespace seg::cli
