#pragma once
// Output folders that never destroy what is not ours (README "Safety").
//
// A run folder holds only the files a run writes (kRunFiles) and a summary.json whose manifest
// names stalesim; a sweep folder holds a sweep.json manifest, sweep.csv and run folders. --force
// replaces only such a folder, or an empty one, and never a protected place (a filesystem root,
// the home folder, the working directory, a checkout, or any folder above these or above the
// scenario file). Replacing is crash-safe: the new run is written to a hidden sibling
// `.NAME.partial-PID` and swapped in with one atomic rename (Linux renameat2 RENAME_EXCHANGE), so
// a SIGKILL at any instant leaves the old complete run or the new complete run under NAME. Hidden
// siblings left by a process that was killed are cleaned up by the next write to the same NAME.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/outputs.hpp"

namespace stalesim {

// Every file a run folder may hold.
inline constexpr std::array<std::string_view, 10> kRunFiles = {
    "summary.json", "metrics.csv", "staleness.csv", "decisions.csv", "gradients.csv",
    "trace.json",   "explain.txt", "timing.csv",    "links.csv",     "done"};

enum class FolderKind {
  kAbsent,  // nothing at the path
  kEmpty,   // an empty folder
  kRun,     // a stalesim run folder (finished or not)
  kSweep,   // a stalesim sweep folder
  kOther,   // anything else: a file, a link to a non-folder, a folder holding other things
};

struct FolderCheck {
  FolderKind kind = FolderKind::kAbsent;
  std::string why;  // kOther: what makes it foreign, in words ("holds 'notes.txt'")
};

// What is at `path` (not following a final symbolic link; see resolve_output_path).
FolderCheck inspect_folder(const std::filesystem::path& path);

// The folder `dir` names, as the writer will use it: absolute, lexically normal, without a
// trailing separator, and with a final symbolic link to a folder resolved (the link is kept and
// its target written). Throws IoError for an empty path and for a dangling link.
std::filesystem::path resolve_output_path(const std::string& dir);

// Throws IoError (naming `dir` and the reason) when --force must not replace `target`: a
// filesystem root, the home folder, the working directory, a git checkout, or a folder holding
// any of them or any of `protect` (e.g. the scenario file).
void refuse_protected(const std::string& dir, const std::filesystem::path& target,
                      const std::vector<std::filesystem::path>& protect);

// Removes this name's hidden temporaries (.NAME.partial-PID, .NAME.old-PID, .NAME.probe-PID)
// left in `parent` by processes no longer alive. When NAME itself is missing and a dead
// process's .NAME.old-PID holds a run, that run is first restored under NAME (the fallback
// replace, below, was killed between its two renames). Never touches anything else. `name`
// empty: the temporaries of every name in `parent` (a sweep folder's points, in one pass).
void clean_stale_temporaries(const std::filesystem::path& parent, const std::string& name);

// Writes `contents` to `path` (created or truncated). Throws IoError with the OS reason
// ("No space left on device").
void write_text_file(const std::filesystem::path& path, std::string_view contents);

// Moves the complete folder `fresh` to `target`: when `target` exists it is swapped atomically
// and the old folder removed; else renamed. `checkpoint(step)` is called between steps (a test
// hook that may kill the process). Throws IoError with the OS reason.
void install_folder(const std::filesystem::path& fresh, const std::filesystem::path& target,
                    const std::function<void(std::string_view)>& checkpoint = {});

}  // namespace stalesim
