// Small file helpers shared by every writer and reader in segtrain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seg {

// Reads a whole file; Error(data) naming the path when it is missing or unreadable.
std::vector<char> read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file `path.tmp.<pid>.<n>` in the same folder, fsync,
// rename over `path`, fsync of the folder (so the rename itself survives a power cut). A crash, kill
// or Ctrl-C at any moment leaves either the old file or the new one, never half a file; at worst a
// stale temporary, which no reader opens. Error(runtime) on failure (disk full, file-size limit,
// permissions), naming the path; the temporary is removed and `path` is left as it was.
//
// Durability::atomic_only skips both fsyncs: still whole-or-nothing against a crash of the process,
// but a power cut may leave an empty or old file. For outputs that can be regenerated (the synthetic
// dataset, predictions: data/file_io.h), where an fsync per file would cost more than the write
// (about 7 ms per file measured on the development machine's ext4, against 1.5 ms without).
enum class Durability { synced, atomic_only };
void write_file_atomic(const std::string& path, const void* data, size_t size, Durability durability = Durability::synced);

// A file's size and a hash of its content: how a checkpoint set records what it committed
// (tools/checkpoint_set.h). The hash is 64-bit FNV-1a taken over 8-byte little-endian words (the
// last < 8 bytes one at a time): not cryptographic, it tells a file that was rewritten or cut short
// from the one that was committed, and runs at memory speed.
struct FileDigest {
  uint64_t bytes = 0;
  uint64_t hash = 0;
  bool operator==(const FileDigest&) const = default;
};
FileDigest digest_of(const void* data, size_t size);
FileDigest file_digest(const std::string& path);  // Error(data) naming the file when unreadable

// Creates a folder and its parents (like mkdir -p); Error(runtime) naming it on failure.
void make_dirs(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace seg
