// The checkpoint set of a training run: the files in DIR that one save writes together, committed as
// a unit by the train state. A save writes, in this order,
//
//   encoder_epoch_E, decoder_epoch_E   at the end of epoch E (upstream's names)
//   encoder_best, decoder_best         when validation ran and beat the best mIoU so far
//   history.csv, history.svg, history.json
//   train_state                        the commit: step, weights, optimizer, RNG, best mIoU, and the
//                                      set (each file above with its size and content hash)
//
// each file atomically (core/fileio.h), so a crash, a kill -9 or a full disk at any moment leaves
// every file either old or new, and the train state names exactly the files of the last complete
// save. On --resume, check_checkpoint_set() compares DIR with that record: files written after it
// (the epoch files of a save that did not finish) are reported and rewritten when training gets
// there again, and a committed file that changed since is reported; the train state itself always
// holds everything an exact continuation needs. docs/reliability.md walks through each moment a kill
// can land.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/fileio.h"

namespace seg::cli {

struct CheckpointSet {
  std::map<std::string, FileDigest> files;  // name in DIR -> size and hash

  // The latest epoch's pair replaces the previous one (older epoch files stay on disk, committed
  // by earlier saves, and are not re-hashed on every resume).
  void set_epoch_files(int64_t epoch, const FileDigest& encoder, const FileDigest& decoder);
  std::string to_json() const;
  // Error(data) naming `path` when the text is not such a record.
  static CheckpointSet from_json(const std::string& text, const std::string& path);
};

// The epoch number of "encoder_epoch_12.safetensors" / "decoder_epoch_12.safetensors", else -1.
int64_t epoch_of_checkpoint_file(const std::string& name);

// What DIR holds beyond (or instead of) the set a train state committed after `epochs_done`
// complete epochs, one readable line each, e.g.
//   "encoder_epoch_3.safetensors was written by a save that did not complete (no train state names
//    it); it is ignored and rewritten at the end of epoch 3".
// Reads and hashes the committed files; never throws for a missing or changed one (the train state
// alone is what a resume needs).
std::vector<std::string> check_checkpoint_set(const std::string& dir, const CheckpointSet& set, int64_t epochs_done);

// Removes DIR/<name>.tmp.<pid>[.<n>] files whose writing process no longer exists (what a kill
// during an atomic write leaves); returns their names. Temporaries of live processes are kept.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

}  // namespace seg::cli
