#pragma once
// A run's output folder (REFERENCE.md "Outputs"): the files of the output table
// (sim/output/output_table.hpp), summary.json first and the `done` marker last. Files are first
// written to a fresh sibling folder and the folder is renamed into place, so a reader never sees a
// half-written run and a rerun never mixes old and new files. Numbers are written in shortest
// round-trip form.

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/output/output_table.hpp"
#include "sim/output/run_result.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim {

// An output folder that cannot be written, or exists and may not be replaced (refused: exit 2), or
// a write that failed part-way, such as on a full disk (write_failed: exit 3).
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  IoError(const std::string& what, bool write_failed)
      : std::runtime_error(what), write_failed_(write_failed) {}
  bool write_failed() const { return write_failed_; }

 private:
  bool write_failed_ = false;
};

// A run's rendered files (sim/output/output_table.hpp), by name, in the table's order; a file the
// run does not write (an empty recorder's, or plots.list) is absent.
struct OutputFiles {
  std::vector<std::pair<std::string_view, std::string>> files;
  std::string result_hash;  // 32 hex digits of XXH3-128
  // The text of the file `name`; "" when it is absent.
  const std::string& text(std::string_view name) const;
  // Sets the file `name` (a row of the output table, else std::logic_error) to `text`.
  void set(std::string_view name, std::string text);
};

// Renders the outputs of a run, each row of the output table by its writer. Pure: no I/O.
// Throws std::logic_error when the result records a file that is no row of the table.
OutputFiles render_outputs(const Scenario& s, const RunResult& r);
// The summary as JSON (also used by the CLI's closing line).
nlohmann::json summary_json(const Scenario& s, const RunResult& r, const std::string& result_hash);

// What --force must never delete, and a test hook (sim/output/run_folder.hpp).
struct OutputGuard {
  // Paths (e.g. the scenario file) that --force must not delete a folder above.
  std::vector<std::filesystem::path> protect{};
  // The user's home folder ($HOME, which the CLI reads; empty: none): never replaced, nor a
  // folder above it.
  std::filesystem::path home{};
  // Called between the steps of writing and installing the folder: a test hook that may kill
  // the process there (STALESIM_INJECT_KILL_AT_STEP).
  std::function<void(std::string_view)> checkpoint{};
  // Clean the hidden temporaries killed writers left beside `dir` first. A sweep passes false:
  // it cleans its folder once for all points (one listing instead of one per point).
  bool clean_stale = true;
};

// Writes the files into `dir` (REFERENCE.md "Safety and errors"): into a hidden sibling first, then swapped
// in atomically. An existing non-empty `dir` is replaced only with `force` and only when it is a stalesim run
// folder outside the protected places; else IoError, and nothing is deleted. The `done` marker is written
// only for runs that were not interrupted.
void write_outputs(const std::string& dir, const OutputFiles& files, bool done, bool force,
                   const OutputGuard& guard = {});
// Checks, before a run, that write_outputs(dir, ..., force, guard) will be able to write:
// IoError (with the OS reason) when `dir` is a file, is occupied and not `force`, is not a run
// folder, is protected, or its parent cannot be created or written to (probed by creating and
// removing a hidden folder there). Restores or removes the hidden temporaries a killed writer
// of `dir` left.
void check_output_dir(const std::string& dir, bool force, const OutputGuard& guard = {});
// Whether `dir` holds a finished run (a run folder with its done marker).
bool holds_finished_run(const std::string& dir);

}  // namespace stalesim
