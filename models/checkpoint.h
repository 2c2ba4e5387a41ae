// Model checkpoints: upstream state_dicts as safetensors files (DESIGN decisions 1, 9, 12).
//
// Names are exactly upstream's state_dict keys (no "module." prefix), one file per component as
// upstream: DIR/encoder_epoch_N.safetensors and DIR/decoder_epoch_N.safetensors.
// In the file:
//   * conv weights have PyTorch's OIHW shape [O, I/groups, KH, KW]; we keep [O, KH, KW, I/groups] in
//     memory and convert here, at file I/O only. Every 4-D parameter is a conv weight.
//   * every BatchNorm has upstream SyncBN's 8 entries: weight, bias, running_mean, running_var,
//     num_batches_tracked (i64 []), _tmp_running_mean (= running_mean), _tmp_running_var
//     (= running_var), _running_iter (f32 [1] = 1), so upstream's multi-GPU code reads the same
//     statistics. On load the last four are optional (files from PyTorch < 0.4.1 lack
//     num_batches_tracked) and the three _tmp/_running_iter values are not used.
//   * floating tensors of any floating dtype load into the model's dtype (as PyTorch's copy_).
// Loading is strict by default: a missing, unexpected or wrongly shaped tensor, or an integer tensor
// where a floating one belongs (or the reverse), is Error(data, exit 3) naming the tensor and the file.
// With strict = false (upstream loads with strict=False) missing and unexpected tensors are skipped
// and listed in the report; a wrong shape or kind is still an error, as in PyTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "layers/module.h"

namespace seg {

class SegmentationModule;

// The module's tensors in upstream state_dict order and form (OIHW conv weights, SyncBN extras),
// as CPU tensors ready to be written.
NamedTensors upstream_state_dict(const Module& m);
// The names, shapes and dtypes of upstream_state_dict(m), in the same order, without copying data.
struct StateDictEntry {
  std::string name;
  Shape shape;
  DType dtype;
};
std::vector<StateDictEntry> upstream_state_dict_layout(const Module& m);

// Returns the size and hash of the file written (what a checkpoint set records).
FileDigest save_checkpoint(const Module& m, const std::string& path, const std::map<std::string, std::string>& metadata = {});

struct LoadOptions {
  bool strict = true;
};
struct LoadReport {
  std::vector<std::string> missing;     // model tensors the file lacks (non-strict only)
  std::vector<std::string> unexpected;  // file tensors the model lacks (non-strict only)
  int64_t loaded = 0;                   // model tensors set from the file
  std::string summary() const;          // "loaded 459 tensors; skipped 2 unexpected (fc.weight, fc.bias)"
};
LoadReport load_checkpoint(Module& m, const std::string& path, const LoadOptions& opt = {});
// The same from an already parsed file; `path` names it in messages.
LoadReport load_state_dict(Module& m, const SafetensorsFile& file, const std::string& path, const LoadOptions& opt = {});

// File names as upstream's train.py writes them (with .safetensors for .pth).
struct CheckpointPaths {
  std::string encoder, decoder;
};
CheckpointPaths checkpoint_paths(const std::string& dir, int64_t epoch);
// From upstream's VAL.checkpoint / TEST.checkpoint value: "epoch_20.pth" (or "epoch_20",
// "epoch_20.safetensors") -> DIR/encoder_epoch_20.safetensors, DIR/decoder_epoch_20.safetensors.
CheckpointPaths checkpoint_paths(const std::string& dir, const std::string& checkpoint_name);

// Both files of a SegmentationModule; metadata records the architectures.
struct CheckpointDigests {
  FileDigest encoder, decoder;
};
CheckpointDigests save_segmentation_checkpoint(const SegmentationModule& model, const CheckpointPaths& paths);
struct SegmentationLoadReport {
  LoadReport encoder, decoder;
};
SegmentationLoadReport load_segmentation_checkpoint(SegmentationModule& model, const CheckpointPaths& paths,
                                                    const LoadOptions& opt = {});

}  // namespace seg
