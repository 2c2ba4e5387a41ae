#include "tools/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/allocator.h"
#include "core/amp_step.h"
#include "core/autograd.h"
#include "core/comm.h"
#include "core/data_parallel.h"
#include "core/fileio.h"
#include "core/loss_scaler.h"
#include "core/op_observer.h"
#include "core/optim.h"
#include "core/profiler.h"
#include "core/readback.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/stream.h"
#include "data/train_dataset.h"
#include "data/train_loader.h"
#include "kernels/cpu/amp.h"
#include "kernels/cpu/thread_pool.h"
#include "layers/activation_ranges.h"
#include "layers/amp_model.h"
#include "layers/anomaly.h"
#include "layers/autocast.h"
#include "layers/sync_bn.h"
#include "models/checkpoint.h"
#include "tools/checkpoint_set.h"
#include "tools/console.h"
#include "tools/device_batches.h"
#include "tools/history.h"
#include "tools/preflight.h"
#include "tools/ranks.h"
#include "tools/resume_check.h"
#include "tools/train_state.h"

namespace seg::cli {

std::string train_state_path(const std::string& dir) { return dir + "/train_state.safetensors"; }

namespace {

struct Optimizers {
  SGD encoder, decoder;
  std::vector<SGD*> all() { return {&encoder, &decoder}; }
};

// ---------------------------------------------------------------- BN re-estimation

// Replaces every BatchNorm's running statistics by their average over `iters` training batches
// (forward only, train mode, cumulative average: momentum 1/(k+1) for the k-th batch). Upstream's
// momentum 0.001 barely moves the statistics in a short run from scratch; this fixes eval mode.
void recalibrate_bn(SegmentationModule& model, const data::TrainDataset& dataset, int64_t iters, const AmpConfig& amp,
                    Device device) {
  auto bns = model.batch_norms();
  std::vector<double> saved;
  for (BatchNorm2d* bn : bns) {
    saved.push_back(bn->momentum);
    bn->running_mean.zero_();
    bn->running_var.fill_(1.0);
  }
  data::TrainLoader loader(dataset, 0);
  model.train(true);
  NoGradGuard no_grad;
  for (int64_t k = 0; k < iters; ++k) {
    for (BatchNorm2d* bn : bns) bn->momentum = 1.0 / static_cast<double>(k + 1);
    const data::TrainBatch batch = loader.next();
    Autocast ac(amp);
    model.forward_train(batch.sub_batches[0].images.to(device).to(amp_input_dtype(amp)),
                        batch.sub_batches[0].labels.to(device));
  }
  for (size_t i = 0; i < bns.size(); ++i) bns[i]->momentum = saved[i];
}

// ---------------------------------------------------------------- data parallel

// What must be the same on every rank, one "key = value" per line (core/data_parallel.h
// check_same_run): the whole config and the device kind. --threads may differ.
std::string run_description(const Config& cfg, Device device) {
  std::string out;
  const nlohmann::json j = cfg.to_json();
  for (const auto& [section, keys] : j.items()) {
    if (!keys.is_object()) {
      out += section + " = " + keys.dump() + "\n";
      continue;
    }
    for (const auto& [key, value] : keys.items()) out += section + "." + key + " = " + value.dump() + "\n";
  }
  out += std::string("device = ") + (device.is_cpu() ? "cpu" : "cuda") + "\n";
  return out;
}

std::vector<Tensor> model_buffers(const SegmentationModule& model) {
  std::vector<Tensor> out;
  for (const NamedTensor& b : model.named_buffers()) out.push_back(*b.tensor);
  return out;
}

// Every tensor that must start equal on all ranks: parameters, then buffers (running statistics).
std::vector<Tensor> model_state(const SegmentationModule& model) {
  std::vector<Tensor> out = model.parameters();
  const std::vector<Tensor> buffers = model_buffers(model);
  out.insert(out.end(), buffers.begin(), buffers.end());
  return out;
}

// ---------------------------------------------------------------- --amp-stats

std::string amp_stats_table(const SegmentationModule& model, Optimizers& opt, double scale) {
  std::string out = "fp16 range of the true gradients (per parameter), at the current loss scale " + format_scale(scale) +
                    " and without scaling:\n";
  out += "  parameter                                    values   flush to 0 unscaled   flush to 0 scaled   inf scaled\n";
  char line[256];
  // Upstream's full names ("encoder.features.14.conv.3.weight"), as --detect-anomaly prints them.
  std::unordered_map<const TensorImpl*, std::string> names;
  for (const auto& p : model.named_parameters()) names[p.tensor->impl()] = p.name;
  for (SGD* sgd : {&opt.encoder, &opt.decoder}) {
    size_t i = 0;
    for (const auto& group : sgd->groups())
      for (const Tensor& p : group.params) {
        const auto& st = sgd->state()[i++];
        Tensor g = st.master_grad.defined() ? st.master_grad : p.grad();
        if (!g.defined()) continue;
        g = g.to(DType::f32).to(Device::cpu()).contiguous();  // a teaching tool: read back per parameter
        const cpu::Fp16Range unscaled = cpu::fp16_range(g.data<float>(), g.numel(), 1.0);
        const cpu::Fp16Range scaled = cpu::fp16_range(g.data<float>(), g.numel(), scale);
        auto pct = [&](int64_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(std::max<int64_t>(1, g.numel())); };
        std::snprintf(line, sizeof line, "  %-42s %8lld   %17.2f%%   %16.2f%%   %9.2f%%\n", names[p.impl()].c_str(),
                      static_cast<long long>(g.numel()), pct(unscaled.underflow), pct(scaled.underflow), pct(scaled.overflow));
        out += line;
      }
  }
  return out;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

void warn(const std::string& text) { std::fprintf(stderr, "segtrain: warning: %s\n", text.c_str()); }

// A failed save (disk full, file-size limit, permissions): what failed, and that the last complete
// checkpoint set is intact (every file is written atomically and the train state last).
Error save_failed(const Error& e, int64_t step, int64_t committed_step, const std::string& dir) {
  Error out(ErrorKind::runtime,
            str("saving the checkpoint of step ", step, " failed: ", e.message(), "; ",
                committed_step > 0 ? str("the last complete checkpoint (step ", committed_step, ", ",
                                         train_state_path(dir), ") is intact")
                                   : std::string("no earlier checkpoint exists")));
  if (!e.context("file").empty()) out.file(e.context("file"));
  // The write's own hint says what to fix (core/fileio.cpp: disk space, permissions); then how to go on.
  std::string fix = e.context("what to do");
  if (fix.empty()) fix = "fix the cause named above";
  out.hint(fix + (committed_step > 0 ? "; then continue with segtrain train ... --resume" : "; then train again"));
  return out;
}

}  // namespace

namespace {

// This machine's name, for the start-up line's list of ranks ("?" if the system will not say).
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "?";
  return name;
}

// One rank's training: every rank runs this (a process under mpirun, a thread per GPU with
// --gpus 0-1); rank 0 alone prints and writes files.
TrainSummary train_rank(const Config& cfg, const CommonFlags& flags, const TrainRunOptions& opt_in, Communicator& comm,
                        const Device device) {
  TrainSummary summary;
  const int rank = comm.rank(), ranks = comm.size();
  TrainRunOptions opt = opt_in;
  if (rank != 0) opt.quiet = true;
  SEG_CHECK(cfg.TRAIN.sub_batches_per_rank >= 1 && cfg.TRAIN.sub_batches_per_rank <= 64, usage,
            "TRAIN.sub_batches_per_rank must be in 1..64, got ", cfg.TRAIN.sub_batches_per_rank);
  SEG_CHECK(cfg.TRAIN.bucket_mb > 0, usage, "TRAIN.bucket_mb must be positive, got ", cfg.TRAIN.bucket_mb);
  if (cfg.TRAIN.allreduce_dtype != "storage" && cfg.TRAIN.allreduce_dtype != "f32")
    throw Error(ErrorKind::usage, "TRAIN.allreduce_dtype '" + cfg.TRAIN.allreduce_dtype + "': storage or f32")
        .key("TRAIN.allreduce_dtype")
        .hint("storage (the default) sends half gradients as half; f32 widens them");
  if (ranks > 1 && comm.device() != device)
    throw Error(ErrorKind::usage, str("rank ", rank, " trains on ", device.str(), " but its communicator (", comm.describe(),
                                      ") moves data on ", comm.device().str()))
        .key("--device")
        .hint("GPUs train data parallel with --gpus 0-1 (one process, NCCL); mpirun ranks train on the CPU");
  check_same_run(comm, run_description(cfg, device));
  const int64_t per_rank = cfg.TRAIN.sub_batches_per_rank;
  const int64_t micro_steps = cfg.TRAIN.accum_steps * per_rank;  // backward passes per optimizer step
  const int64_t sub_batches = per_rank * ranks;                  // sub-batches per loader iteration
  SEG_CHECK(cfg.TRAIN.accum_steps >= 1, usage, "TRAIN.accum_steps must be >= 1, got ", cfg.TRAIN.accum_steps);
  SEG_CHECK(cfg.TRAIN.epoch_iters >= 1 && cfg.TRAIN.num_epoch >= 1, usage, "TRAIN.epoch_iters and TRAIN.num_epoch must be >= 1");
  SEG_CHECK(cfg.TRAIN.disp_iter >= 1, usage, "TRAIN.disp_iter must be >= 1");
  SEG_CHECK(cfg.TRAIN.optim == "SGD", usage, "TRAIN.optim '", cfg.TRAIN.optim, "': only SGD exists (as upstream)");
  install_stop_handlers();
  if (rank == 0) make_dirs(cfg.DIR);
  reset_global_rng(static_cast<uint64_t>(cfg.TRAIN.seed));

  const AmpConfig amp = amp_config(cfg);
  auto model = build_segmentation_module(model_config(cfg), true);
  // No progress bar under mpirun: mpirun gives the ranks a terminal even when its own output is a file.
  const bool live = stdout_is_terminal() && !opt.quiet && ranks == 1;
  auto say = [&](const std::string& s) {
    if (!opt.quiet) std::printf("%s\n", s.c_str());
  };
  if (!cfg.MODEL.weights_encoder.empty())
    say("encoder weights " + cfg.MODEL.weights_encoder + ": " +
        load_checkpoint(*model->encoder, cfg.MODEL.weights_encoder, {false}).summary());
  if (!cfg.MODEL.weights_decoder.empty())
    say("decoder weights " + cfg.MODEL.weights_decoder + ": " +
        load_checkpoint(*model->decoder, cfg.MODEL.weights_decoder, {false}).summary());

  const int64_t steps_per_epoch = cfg.TRAIN.epoch_iters, max_steps = steps_per_epoch * cfg.TRAIN.num_epoch;
  int64_t start_step = 0;
  if (!opt.resume && cfg.TRAIN.start_epoch > 0) {
    // Upstream's resume: weights of epoch start_epoch, fresh optimizers, the schedule continues.
    const CheckpointPaths paths = checkpoint_paths(cfg.DIR, cfg.TRAIN.start_epoch);
    load_segmentation_checkpoint(*model, paths);
    start_step = cfg.TRAIN.start_epoch * steps_per_epoch;
    say("loaded " + paths.encoder + " and " + paths.decoder + " (TRAIN.start_epoch " + std::to_string(cfg.TRAIN.start_epoch) + ")");
  }
  cast_model_for_amp(*model, amp);
  model->to(device);  // parameters and buffers; the optimizers below keep their state there too
  // Every rank starts from rank 0's model (they initialise alike from the seed; this makes sure),
  // before the optimizers copy master weights from it.
  broadcast_from_root(comm, model_state(*model));
  Optimizers opt_pair{SGD(SegmentationModule::param_groups(*model->encoder, cfg.TRAIN.weight_decay), cfg.TRAIN.lr_encoder,
                          cfg.TRAIN.beta1, amp.master_weights()),
                      SGD(SegmentationModule::param_groups(*model->decoder, cfg.TRAIN.weight_decay), cfg.TRAIN.lr_decoder,
                          cfg.TRAIN.beta1, amp.master_weights())};
  LossScaler scaler(amp.scaler);
  History history;
  CheckpointSet set;  // the files of the last complete save (tools/checkpoint_set.h)
  if (rank == 0)
    for (const std::string& name : remove_stale_temporaries(cfg.DIR))
      say("removed " + cfg.DIR + "/" + name + " (a temporary file left by an interrupted write)");
  if (opt.resume) {
    const std::string state_path = train_state_path(cfg.DIR);
    const SafetensorsFile state = read_train_state(state_path);
    const TrainStateMeta meta = train_state_meta(state, state_path);
    check_resume_differences(resume_differences(meta, cfg, sub_batches, ranks), opt.force, state_path);
    restore_train_state(state, state_path, *model, opt_pair.encoder, opt_pair.decoder, scaler);
    start_step = meta.step;
    summary.best_miou = meta.best_miou;
    set = meta.set;
    if (rank == 0)
      for (const std::string& note : check_checkpoint_set(cfg.DIR, set, start_step / steps_per_epoch)) warn(note);
    history.load(cfg.DIR);
    history.truncate(start_step);
    say("resumed from " + state_path + " at step " + std::to_string(start_step) + " of " + std::to_string(max_steps));
  }
  summary.start_step = summary.steps = start_step;
  summary.max_steps = max_steps;

  data::DatasetOptions dopt = dataset_options(cfg, flags);
  // Each iteration has ranks x sub_batches_per_rank sub-batches; this rank loads its own.
  dopt.num_gpus = static_cast<int>(sub_batches);
  dopt.first_sub_batch = static_cast<int>(rank * per_rank);
  dopt.local_sub_batches = static_cast<int>(per_rank);
  dopt.validate();
  data::TrainDataset dataset(dopt);
  if (start_step < max_steps && rank == 0) {  // a finished run has nothing to load; the files are rank 0's to check
    const int threads = std::max<int>(1, static_cast<int>(cfg.TRAIN.workers));
    const PreflightSummary pre = preflight_list(dataset.list(), "training list", true, dopt.on_bad_sample, threads);
    if (cfg.TRAIN.eval_every > 0)
      preflight_list(data::ValDataset(dopt).list(), "validation list", false, dopt.on_bad_sample, threads);
    char line[160];
    std::snprintf(line, sizeof line, "checked the files of %lld list entries in %.1f s", static_cast<long long>(pre.entries),
                  pre.seconds);
    say(line);
  }
  data::TrainLoader loader(dataset, start_step * cfg.TRAIN.accum_steps);
  DeviceBatches batches(loader, device, amp_input_dtype(amp));

  const int64_t global_batch = cfg.TRAIN.batch_size_per_gpu * cfg.TRAIN.accum_steps * sub_batches;
  nlohmann::json derived = {{"max_iters", max_steps},
                            {"batch_size", cfg.TRAIN.batch_size_per_gpu},
                            {"effective_batch_size", global_batch},
                            {"ranks", ranks},
                            {"sub_batches_per_iteration", sub_batches},
                            {"device", device.str()},
                            {"threads", num_threads()},
                            {"train_images", dataset.size()}};
  if (rank == 0) dump_config(cfg, derived, cfg.DIR + "/config.json");
  say("segtrain train: " + cfg.MODEL.arch_encoder + " + " + cfg.MODEL.arch_decoder + ", " +
      std::to_string(model->num_parameters()) + " parameters, " + std::to_string(dataset.size()) + " training images, " +
      std::to_string(max_steps) + " steps of " + std::to_string(global_batch) + " images on " + device.str() + " (" +
      std::to_string(num_threads()) + " threads" + (ranks > 1 ? " per rank" : "") + "), run folder " + cfg.DIR);
  // The communicator line: which backend, how many ranks, and how a step's batch is split.
  std::optional<GradientAllReduce> allreduce;
  std::optional<CommBatchNormReducer> sync_bn;
  if (ranks > 1) {
    allreduce.emplace(comm, model->parameters(), static_cast<int64_t>(cfg.TRAIN.bucket_mb * 1024 * 1024),
                      cfg.TRAIN.allreduce_dtype == "f32" ? GradientWire::f32 : GradientWire::storage);
    if (cfg.TRAIN.sync_bn) {
      sync_bn.emplace(comm);
      use_sync_bn(model->batch_norms(), &*sync_bn);
    }
    const GradientAllReduce::Stats st = allreduce->stats();
    char line[400];
    std::snprintf(line, sizeof line,
                  "data parallel: %s; %d ranks x %lld sub-batch(es) of %lld images; gradients (%.1f MB, %s) all-reduced "
                  "in %lld bucket(s) of <= %.0f MB during backward; BatchNorm %s",
                  comm.describe().c_str(), ranks, static_cast<long long>(per_rank),
                  static_cast<long long>(cfg.TRAIN.batch_size_per_gpu), static_cast<double>(st.bytes) / (1024.0 * 1024.0),
                  st.half_buckets > 0 ? (st.half_buckets == st.buckets ? "half" : "half and f32") : "f32",
                  static_cast<long long>(st.buckets), cfg.TRAIN.bucket_mb,
                  cfg.TRAIN.sync_bn ? "synchronised over the ranks (TRAIN.sync_bn)" : "per rank (TRAIN.sync_bn false)");
    say(line);
    // Where every rank runs (describe() names rank 0's only): "ranks: 0 on a (cpu), 1 on b (cpu)".
    const std::vector<std::string> places = comm.allgather_string(host_name() + " (" + device.str() + ")");
    std::string where = "ranks:";
    for (size_t r = 0; r < places.size(); ++r) where += (r ? ", " : " ") + std::to_string(r) + " on " + places[r];
    say(where);
  } else if (per_rank > 1) {
    say("one process runs " + std::to_string(per_rank) + " sub-batches of " + std::to_string(cfg.TRAIN.batch_size_per_gpu) +
        " images per step (TRAIN.sub_batches_per_rank), BatchNorm per sub-batch");
  }
  if (!opt.quiet) std::printf("%s", amp.policy_table(flags.no_tf32).c_str());

  Allocator& alloc = allocator_for(device);
  Progress progress("train", max_steps, live);
  auto note = [&](const std::string& text) {
    if (rank == 0) progress.line(text);  // one rank speaks for all
  };
  double epoch_loss = 0, epoch_acc = 0, epoch_time = 0, epoch_data = 0;
  int64_t epoch_count = 0;
  double interval_loss = 0, interval_acc = 0, interval_data = 0;
  int64_t interval_steps = 0, interval_images = 0;
  auto interval_start = std::chrono::steady_clock::now();
  const auto run_start = std::chrono::steady_clock::now();
  int64_t steps_this_run = 0;
  bool any_rank_stopping = false;  // several ranks: a signal reached one of them (all stop together)

  // Saving: files first, then the commit (history.json, then the train state naming them all).
  // A write that fails leaves the last complete checkpoint set as it was; the epoch files this save
  // had already written are removed (no other save uses their names), and the error says so.
  int64_t committed_step = opt.resume ? start_step : 0;
  std::vector<std::string> uncommitted;
  auto saving = [&](int64_t step, const std::function<void()>& write) {
    if (rank != 0) return;  // rank 0 writes every file
    try {
      write();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::runtime) throw;
      // unlink, not std::remove: the failure may be that a folder stands where the file goes, and
      // std::remove would delete that (empty) folder too.
      for (const std::string& f : uncommitted) ::unlink(f.c_str());
      throw save_failed(e, step, committed_step, cfg.DIR);
    }
  };
  auto commit = [&](int64_t step) {
    saving(step, [&] {  // a no-op on ranks other than 0
      set.files["history.json"] = history.save(cfg.DIR);
      save_train_state(train_state_path(cfg.DIR), *model, opt_pair.encoder, opt_pair.decoder, scaler, step, cfg,
                       summary.best_miou, set, sub_batches, ranks);
    });
    committed_step = step;
    uncommitted.clear();
  };

  // --detect-anomaly: checks every op's outputs and gradients (layers/anomaly.h).
  std::optional<AnomalyDetector> anomaly;
  if (opt.detect_anomaly || cfg.TRAIN.detect_anomaly) anomaly.emplace(*model);
  // --profile-steps: a CUDA profiler captures only those steps (tools/profile_steps.h).
  ProfileSteps profiling(opt.profile_steps, device, note);

  for (int64_t step = start_step; step < max_steps; ++step) {
    profiling.begin_step(step + 1);  // before the step's data: its loader wait and copy belong to it
    const int64_t epoch = step / steps_per_epoch + 1, i = step % steps_per_epoch;
    if (i == 0 || step == start_step) epoch_loss = epoch_acc = epoch_time = epoch_data = 0, epoch_count = 0;
    const double lr_e = poly_lr(cfg.TRAIN.lr_encoder, step, max_steps, cfg.TRAIN.lr_pow);
    const double lr_d = poly_lr(cfg.TRAIN.lr_decoder, step, max_steps, cfg.TRAIN.lr_pow);
    opt_pair.encoder.set_lr(lr_e);
    opt_pair.decoder.set_lr(lr_d);
    model->train(!cfg.TRAIN.fix_bn);
    opt_pair.encoder.zero_grad();
    opt_pair.decoder.zero_grad();
    const auto t0 = std::chrono::steady_clock::now();
    double step_loss = 0, step_acc = 0, wait = 0;
    int64_t images = 0;
    // Everything the host needs from this step (losses, accuracy counts, the found-inf flag) comes
    // back in one copy, in unscale_and_step (core/readback.h).
    ReadBack readback(device);
    std::vector<std::pair<size_t, size_t>> slots;  // (loss, stats) per micro-batch
    std::optional<ScopedOpObserver> observing, ranging;
    if (anomaly) {
      anomaly->begin_step(scaler.scale(), scaler.enabled() && scaler.options().dynamic);
      observing.emplace(*anomaly);
    }
    const bool amp_stats_now = opt.amp_stats && i % cfg.TRAIN.disp_iter == 0;
    ActivationRanges ranges;
    if (amp_stats_now) ranging.emplace(ranges);
    for (int64_t a = 0; a < micro_steps; ++a) {
      const DeviceBatch batch = batches.next();
      // Gradients travel once per optimizer step: during the last backward.
      if (allreduce) allreduce->set_sync(a + 1 == micro_steps);
      wait += batch.wait_seconds;
      images += batch.images_count;
      TrainOutput out;
      {
        Autocast ac(amp);
        prof::Range range("forward");
        out = model->forward_train(batch.images, batch.labels);
      }
      {
        prof::Range range("backward");
        // Seed S / (micro-steps x ranks): the all-reduce then sums (core/data_parallel.h).
        scaled_backward(out.loss, scaler, static_cast<int>(micro_steps * ranks));
      }
      slots.emplace_back(readback.add(out.loss), readback.add(out.stats));
    }
    ranging.reset();  // the observers watch forward and backward, not the optimizer
    observing.reset();
    if (allreduce) {
      prof::Range range("gradient.allreduce.wait");
      allreduce->finish();  // every gradient is now the sum over the ranks of pre-divided ones: the average
    }
    const StepOutcome outcome = unscale_and_step(scaler, opt_pair.all(), &readback, &comm);
    for (const auto& [loss_slot, stats_slot] : slots) {
      TrainOutput read;
      read_train_stats(read, readback.host(stats_slot), cfg.DATASET.num_class);
      step_loss += readback.item(loss_slot) / static_cast<double>(micro_steps);
      step_acc += read.acc.acc / static_cast<double>(micro_steps);
    }
    profiling.end_step(step + 1);  // the step's work is queued; the stop waits for the device to finish it
    if (ranks > 1) {
      // The logged loss and accuracy are the means over the ranks, the images the global batch;
      // the stop request too is shared, so every rank stops after the same step.
      std::vector<double> v = {step_loss, step_acc, static_cast<double>(images), stop_requested() ? 1.0 : 0.0};
      comm.allreduce_sum(v.data(), static_cast<int64_t>(v.size()));
      step_loss = v[0] / ranks, step_acc = v[1] / ranks, images = static_cast<int64_t>(v[2]);
      any_rank_stopping = v[3] > 0;
    }
    if (!outcome.stepped) {
      ++summary.skipped_steps;
      note(outcome.message);
      if (anomaly && anomaly->backward_anomaly()) {
        ++summary.anomalies;
        note("anomaly: step " + std::to_string(step + 1) + " skipped: " + anomaly->backward_anomaly()->one_line);
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++steps_this_run;
    epoch_loss += step_loss, epoch_acc += step_acc, epoch_time += secs, epoch_data += wait, ++epoch_count;
    interval_loss += step_loss, interval_acc += step_acc, interval_data += wait, ++interval_steps, interval_images += images;
    if (amp_stats_now) {
      note(amp_stats_table(*model, opt_pair, outcome.scale_used));
      note(ranges.table(outcome.scale_used));
    }

    const bool log_now = i % cfg.TRAIN.disp_iter == 0 || step + 1 == max_steps;
    if (log_now) {
      const double interval_secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - interval_start).count();
      HistoryRow row;
      row.iteration = step + 1;
      row.epoch = epoch;
      row.loss = interval_loss / static_cast<double>(interval_steps);
      row.accuracy = interval_acc / static_cast<double>(interval_steps);
      row.lr_encoder = lr_e;
      row.lr_decoder = lr_d;
      row.images_per_second = interval_secs > 0 ? static_cast<double>(interval_images) / interval_secs : 0;
      row.data_wait_share = interval_secs > 0 ? interval_data / interval_secs : 0;
      row.loss_scale = outcome.scale_used;
      row.peak_memory_bytes = static_cast<int64_t>(alloc.stats().peak_bytes);
      history.add(row);
      if (summary.first_loss == 0) summary.first_loss = row.loss;
      summary.last_loss = row.loss;
      summary.last_accuracy = row.accuracy;
      char line[512];
      std::snprintf(line, sizeof line,
                    "Epoch: [%lld][%lld/%lld], Time: %.2f, Data: %.2f, lr_encoder: %.6f, lr_decoder: %.6f, "
                    "Accuracy: %4.2f, Loss: %.6f | %.1f img/s, data wait %.0f%%, peak %s, loss scale %s",
                    static_cast<long long>(epoch), static_cast<long long>(i), static_cast<long long>(steps_per_epoch),
                    epoch_time / static_cast<double>(epoch_count), epoch_data / static_cast<double>(epoch_count), lr_e,
                    lr_d, 100.0 * epoch_acc / static_cast<double>(epoch_count),
                    epoch_loss / static_cast<double>(epoch_count), row.images_per_second, 100.0 * row.data_wait_share,
                    mib(row.peak_memory_bytes).c_str(), format_scale(outcome.scale_used).c_str());
      if (!opt.quiet) note(line);
      interval_loss = interval_acc = interval_data = 0, interval_steps = interval_images = 0;
      interval_start = std::chrono::steady_clock::now();
    }
    char status[96];
    std::snprintf(status, sizeof status, "loss %.4f", step_loss);
    progress.update(step + 1, status);

    const bool epoch_end = i + 1 == steps_per_epoch;
    if (epoch_end) {
      // Per-rank BatchNorm (TRAIN.sync_bn false) leaves each rank with its own running statistics:
      // rank 0's are the model's (as DDP's buffer broadcast), for the files and the validation.
      if (ranks > 1 && !cfg.TRAIN.sync_bn) broadcast_from_root(comm, model_buffers(*model));
      saving(step + 1, [&] {
        const CheckpointPaths paths = checkpoint_paths(cfg.DIR, epoch);
        uncommitted = {paths.encoder, paths.decoder};
        const CheckpointDigests d = save_segmentation_checkpoint(*model, paths);
        set.set_epoch_files(epoch, d.encoder, d.decoder);
      });
      // Validation comes before the commit, so the train state holds the model as training goes on
      // with it (BN re-estimation changes the running statistics) and the best mIoU with its files.
      if (cfg.TRAIN.eval_every > 0 && epoch % cfg.TRAIN.eval_every == 0) {
        if (cfg.TRAIN.bn_recalibrate_iters > 0) {
          recalibrate_bn(*model, dataset, cfg.TRAIN.bn_recalibrate_iters, amp, device);
          broadcast_from_root(comm, model_buffers(*model));  // per-rank BN: rank 0's statistics for all
        }
        data::ValDataset val(dopt);
        EvalOptions eo;
        eo.amp = amp;
        eo.max_images = cfg.VAL.max_images;
        eo.comm = &comm;  // the ranks split the validation list
        const EvalResult r = evaluate(*model, val, load_class_table(cfg), eo);
        history.add_eval(EvalRow{epoch, step + 1, r.mean_iou, r.pixel_accuracy});
        char line[200];
        std::snprintf(line, sizeof line, "[Eval epoch %lld]: Mean IoU: %.4f, Accuracy: %.2f%%", static_cast<long long>(epoch),
                      r.mean_iou, 100.0 * r.pixel_accuracy);
        note(line);
        if (r.mean_iou > summary.best_miou) {
          summary.best_miou = r.mean_iou;
          saving(step + 1, [&] {
            const CheckpointDigests d = save_segmentation_checkpoint(
                *model, CheckpointPaths{cfg.DIR + "/encoder_best.safetensors", cfg.DIR + "/decoder_best.safetensors"});
            set.files["encoder_best.safetensors"] = d.encoder;
            set.files["decoder_best.safetensors"] = d.decoder;
          });
        }
        summary.last_eval = r;
      }
      commit(step + 1);
    }
    const bool signalled = stop_requested() || any_rank_stopping;
    const bool stop = signalled || (opt.stop_after > 0 && steps_this_run >= opt.stop_after);
    if (stop && step + 1 < max_steps) {
      if (committed_step != step + 1) commit(step + 1);
      note(std::string("stopped by ") +
                    (stop_requested() ? stop_signal_name() : signalled ? "a signal to another rank" : "--stop-after") +
                    " after step " +
                    std::to_string(step + 1) + "; resumable state saved to " + train_state_path(cfg.DIR) +
                    " (continue with --resume)");
      summary.interrupted = true;
      summary.steps = step + 1;
      summary.steps_this_run = steps_this_run;
      break;
    }
    summary.steps = step + 1;
    summary.steps_this_run = steps_this_run;
  }
  profiling.finish(start_step + 1, start_step + steps_this_run);
  progress.finish();
  // Every epoch end commits, and max_steps is a whole number of epochs: the last step is saved.
  SEG_ASSERT(summary.interrupted || committed_step == summary.steps || steps_this_run == 0);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  return summary;
}

}  // namespace

TrainSummary run_training(const Config& cfg, const CommonFlags& flags, const TrainRunOptions& opt) {
  // One rank per process, or a thread per GPU (--gpus 0-1): tools/ranks.h. The process's first
  // rank's summary is returned (rank 0's with threads; each process's own under mpirun); only that
  // thread writes it.
  TrainSummary summary;
  run_ranks(cfg, flags, [&](const RankContext& r) {
    TrainSummary mine = train_rank(cfg, r.flags, opt, r.comm, r.device);
    if (r.local == 0) summary = std::move(mine);
  });
  return summary;
}

}  // namespace seg::cli
