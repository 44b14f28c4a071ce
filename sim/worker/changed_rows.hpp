#pragma once
// Bosen's row deltas for the cached modes (ESSP's eager pushes and lazy SSP's fetch replies):
// the server sends a worker only the rows changed since the copy it last sent that worker, as
// Bosen's SSPPush does for row-oriented tables (Dai, Kumar, Wei, Ho, Gibson, Xing, AAAI 2015,
// section 4; Wei et al., SoCC 2015). A copy's bytes are the sum of those rows' wire bytes
// (Model::row_bytes); a worker's first copy is the whole model. Dense models (row_count() == 0)
// always send the whole model. Deterministic: rows are kept in a vector indexed by row.

#include <cstdint>
#include <span>
#include <vector>

namespace stalesim {

class ChangedRows {
 public:
  ChangedRows() = default;
  // `row_bytes[r]`: the wire bytes of row r; empty = disabled (every copy is the whole model).
  ChangedRows(std::vector<int64_t> row_bytes, int32_t workers)
      : row_bytes_(std::move(row_bytes)),
        changed_at_(row_bytes_.size(), 0),
        last_copy_(static_cast<size_t>(workers), -1) {}

  bool enabled() const { return !row_bytes_.empty(); }

  // The update that made server version `version` changed `rows`.
  void note_update(std::span<const int32_t> rows, int64_t version) {
    for (int32_t r : rows) changed_at_[static_cast<size_t>(r)] = version;
  }

  // The worker lost what was on its way to it (a crash): its next copy is the whole model.
  void forget(int32_t worker) {
    if (enabled()) last_copy_[static_cast<size_t>(worker)] = -1;
  }

  // Bytes of the copy of server version `version` sent to `worker` now (`full` when disabled or
  // for its first copy); remembers that the worker now holds `version`.
  int64_t copy_bytes(int32_t worker, int64_t version, int64_t full) {
    if (!enabled()) return full;
    int64_t& last = last_copy_[static_cast<size_t>(worker)];
    int64_t bytes = 0;
    if (last < 0) {
      bytes = full;
    } else {
      for (size_t r = 0; r < changed_at_.size(); ++r)
        if (changed_at_[r] > last) bytes += row_bytes_[r];
    }
    last = version;
    return bytes;
  }

 private:
  std::vector<int64_t> row_bytes_;
  std::vector<int64_t> changed_at_;  // per row: the server version of its latest change (0: none)
  std::vector<int64_t> last_copy_;   // per worker: the version of its last copy (-1: none yet)
};

}  // namespace stalesim
