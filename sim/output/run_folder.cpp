#include "sim/output/run_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/output/output_table.hpp"

namespace stalesim {

namespace fs = std::filesystem;

namespace {

bool is_run_file(const std::string& name) { return find_output(name) != nullptr; }

bool is_sweep_file(const std::string& name) {
  return std::find(kSweepFiles.begin(), kSweepFiles.end(), name) != kSweepFiles.end();
}

constexpr std::string_view kTempPrefix = ".stalesim-";
constexpr std::string_view kMarker = ".stalesim-temporary";
constexpr std::string_view kMarkerPart = ".stalesim-temporary.part";  // the marker being written
constexpr std::uint64_t kMaxMarkerBytes = 64u << 10;
constexpr std::uint64_t kMaxPlotListBytes = 1u << 20;

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// This machine's name, as the markers record it: a process on another machine that shares the
// folder (NFS) is never taken for dead by its PID here.
std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// The first 8 hex digits of a temporary's token: FNV-1a of the host name, so that a temporary
// killed before its marker was written still says which machine made it.
std::string host_tag(const std::string& host) {
  std::uint32_t h = 2166136261u;
  for (const unsigned char c : host) h = (h ^ c) * 16777619u;
  return fmt::format("{:08x}", h);
}

// 8 hex digits from the kernel's random source (never used for anything simulated).
std::string random_token() {
  std::uint32_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError(fmt::format("cannot draw a random token: {}", std::strerror(errno)));
    got += static_cast<size_t>(n);
  }
  return fmt::format("{:08x}", v);
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::optional<nlohmann::json> read_manifest(const fs::path& p, std::uint64_t max_bytes = kMaxManifestBytes,
                                            bool follow_links = true) {
  std::string why;
  auto j = read_json_file(p.string(), max_bytes, why, follow_links);
  if (!j || !j->is_object()) return std::nullopt;
  return j;
}

std::string quoted(const std::string& name) { return fmt::format("'{}'", name); }

// Whether `inner` is `outer` or lies below it (both canonical).
bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}

bool unfinished_dead_temporary(const fs::path& path, bool dead_only);
}  // namespace

namespace {

// Whether `path` is a report folder (kReportManifest): its manifest names stalesim_report and
// every other entry is a regular file the manifest lists.
bool is_report_folder(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path / kReportManifest, ec))) return false;
  const auto j = read_manifest(path / kReportManifest);
  if (!j || !j->is_object() || !j->contains("stalesim_report") || !j->contains("files") ||
      !(*j)["files"].is_array())
    return false;
  std::vector<std::string> files;
  for (const auto& f : (*j)["files"])
    if (f.is_string()) files.push_back(f.get<std::string>());
  for (fs::directory_iterator it(path, ec), end; it != end; it.increment(ec)) {
    if (ec) return false;
    const std::string name = it->path().filename().string();
    if (name == kReportManifest || our_temporary(it->path())) continue;
    if (it->symlink_status(ec).type() != fs::file_type::regular) return false;
    if (std::find(files.begin(), files.end(), name) == files.end()) return false;
  }
  return !ec;
}

}  // namespace

FolderCheck inspect_folder(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || st.type() == fs::file_type::not_found) return {FolderKind::kAbsent, ""};
  if (st.type() == fs::file_type::symlink) return {FolderKind::kOther, "is a symbolic link"};
  if (st.type() != fs::file_type::directory) return {FolderKind::kOther, "exists and is not a folder"};
  if (is_report_folder(path)) return {FolderKind::kReport, ""};
  bool any = false, run_files = false, summary = false, sweep_manifest = false, sweep_items = false,
       plot_files = false;
  const std::vector<std::string> plots = recorded_plots(path);  // figures our plot scripts wrote here
  for (fs::directory_iterator it(path, ec), end; it != end; it.increment(ec)) {
    if (ec) break;
    any = true;
    const std::string name = it->path().filename().string();
    const fs::file_status es = it->symlink_status(ec);
    // A run's or sweep's hidden temporary, proven ours, or one of ours that holds nothing yet.
    if (our_temporary(it->path()) || unfinished_dead_temporary(it->path(), false)) continue;
    // Figures our plot scripts wrote, and their record: the folder's, a run's or a sweep's.
    if (es.type() == fs::file_type::regular &&
        (name == "plots.list" || std::find(plots.begin(), plots.end(), name) != plots.end())) {
      plot_files = true;
      continue;
    }
    if (es.type() == fs::file_type::regular && is_run_file(name)) {
      run_files = true;
      summary = summary || name == "summary.json";
      continue;
    }
    if (es.type() == fs::file_type::regular && is_sweep_file(name)) {
      sweep_items = true;
      sweep_manifest = sweep_manifest || name == "sweep.json";
      continue;
    }
    if (es.type() == fs::file_type::directory) {
      // A sweep's point folder: a run folder, or empty; or a report on the sweep.
      const FolderCheck sub = inspect_folder(it->path());
      if (sub.kind == FolderKind::kRun || sub.kind == FolderKind::kEmpty || sub.kind == FolderKind::kReport) {
        sweep_items = true;
        continue;
      }
      return {FolderKind::kOther,
              fmt::format("holds the folder {}, which {}", quoted(name),
                          sub.kind == FolderKind::kSweep ? "is a sweep folder" : sub.why)};
    }
    return {FolderKind::kOther, fmt::format("holds {}, which no stalesim run or sweep writes", quoted(name))};
  }
  if (ec) return {FolderKind::kOther, fmt::format("cannot be listed: {}", ec.message())};
  if (!any) return {FolderKind::kEmpty, ""};
  if (run_files && sweep_items) return {FolderKind::kOther, "mixes the files of a run and of a sweep"};
  if (run_files) {
    if (!summary) return {FolderKind::kOther, "holds run files but no summary.json"};
    const auto j = read_manifest(path / "summary.json");
    if (!j || !j->contains("manifest") || !(*j)["manifest"].is_object() ||
        !(*j)["manifest"].contains("stalesim_version"))
      return {FolderKind::kOther, "holds a summary.json that is not a stalesim run's"};
    return {FolderKind::kRun, ""};
  }
  if (sweep_items) {
    if (!sweep_manifest) return {FolderKind::kOther, "holds folders but no sweep.json"};
    const auto j = read_manifest(path / "sweep.json");
    if (!j || !j->contains("stalesim_sweep"))
      return {FolderKind::kOther, "holds a sweep.json that is not a stalesim sweep's"};
    return {FolderKind::kSweep, ""};
  }
  if (plot_files) return {FolderKind::kOther, "holds figures of our plot scripts but no run or sweep"};
  return {FolderKind::kEmpty, ""};  // only temporaries of ours
}

fs::path resolve_output_path(const std::string& dir) {
  if (dir.empty()) throw IoError("output folder: the path is empty");
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  if (ec) throw IoError(fmt::format("{}: cannot resolve the path: {}", dir, ec.message()));
  p = p.lexically_normal();
  while (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "out/" -> "out"
  if (fs::is_symlink(fs::symlink_status(p, ec))) {
    const fs::path real = fs::canonical(p, ec);
    if (ec)
      throw IoError(
          fmt::format("{}: a symbolic link to a path that does not resolve: {}", dir, ec.message()));
    if (!fs::is_directory(real, ec))
      throw IoError(fmt::format("{}: a symbolic link to {}, which is not a folder", dir, real.string()));
    return real;
  }
  return p;
}

void refuse_protected(const std::string& dir, const fs::path& target, const std::vector<fs::path>& protect,
                      const fs::path& home) {
  const fs::path t = canonical_or_self(target);
  const auto refuse = [&](const std::string& why) {
    throw IoError(
        fmt::format("{}: --force will not replace {} ({}); nothing was deleted", dir, why, t.string()));
  };
  if (t == t.root_path()) refuse("a filesystem root");
  std::error_code ec;
  if (fs::exists(t / ".git", ec)) refuse("a git checkout");
  if (!home.empty() && within(canonical_or_self(home), t))
    refuse(canonical_or_self(home) == t ? "the home folder" : "a folder that holds the home folder");
  if (const fs::path cwd = fs::current_path(ec); !ec && within(canonical_or_self(cwd), t))
    refuse(canonical_or_self(cwd) == t ? "the working directory"
                                       : "a folder that holds the working directory");
  for (const auto& p : protect)
    if (!p.empty() && within(canonical_or_self(p), t))
      refuse(fmt::format("a folder that holds {}", p.string()));
}

namespace {

// The parts of a name `.stalesim-KIND-PID-TOKEN`, or nullopt when `entry` is not one.
struct TemporaryName {
  std::string kind, token;
  long pid = 0;
};
std::optional<TemporaryName> parse_temporary_name(const std::string& entry) {
  if (!entry.starts_with(kTempPrefix)) return std::nullopt;
  const std::string rest = entry.substr(kTempPrefix.size());
  const size_t d1 = rest.find('-'), d2 = rest.rfind('-');
  if (d1 == std::string::npos || d2 == d1) return std::nullopt;
  TemporaryName t;
  t.kind = rest.substr(0, d1);
  const std::string digits = rest.substr(d1 + 1, d2 - d1 - 1);
  t.token = rest.substr(d2 + 1);
  if (t.kind != "partial" && t.kind != "probe" && t.kind != "tmp") return std::nullopt;
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  if (t.token.size() != 16 || !is_hex(t.token)) return std::nullopt;
  t.pid = std::stol(digits);
  return t;
}

// A temporary of a process of this machine killed between its mkdir and its marker's rename:
// named as ours with this machine's host tag, a real folder (not a link), holding nothing or only
// the marker being written (a regular file of at most 64 KiB), its process gone. Removing it
// loses nothing: nobody else's data can be in it.
// `dead_only` false: whatever its process (inspect_folder: an empty unfinished temporary is no
// user's data).
bool unfinished_dead_temporary(const fs::path& path, bool dead_only) {
  const auto name = parse_temporary_name(path.filename().string());
  if (!name || name->token.substr(0, 8) != host_tag(this_host()) || (dead_only && process_alive(name->pid)))
    return false;
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() != fs::file_type::directory) return false;
  for (fs::directory_iterator it(path, ec), end; it != end; it.increment(ec)) {
    if (ec) return false;
    const auto st = it->symlink_status(ec);
    if (it->path().filename() != kMarkerPart || st.type() != fs::file_type::regular ||
        it->file_size(ec) > kMaxMarkerBytes)
      return false;
  }
  return !ec;
}

bool dead(const Temporary& t) { return t.host == this_host() && !process_alive(t.pid); }

}  // namespace

std::vector<std::string> recorded_plots(const fs::path& dir) {
  std::string why;
  const auto text = read_regular_file((dir / "plots.list").string(), kMaxPlotListBytes, why, false);
  std::vector<std::string> names;
  if (!text) return names;
  size_t at = 0;
  while (at < text->size()) {
    size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(at, end - at);
    if (!line.empty() && line != "." && line != ".." && line.find('/') == std::string::npos &&
        line.find('\0') == std::string::npos)
      names.push_back(line);
    at = end + 1;
  }
  return names;
}

std::optional<Temporary> our_temporary(const fs::path& path) {
  // ".stalesim-KIND-PID-TOKEN"
  const auto name = parse_temporary_name(path.filename().string());
  if (!name) return std::nullopt;
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() != fs::file_type::directory) return std::nullopt;
  // Not through a link: a marker must lie in the folder it proves.
  const auto marker = read_manifest(path / std::string(kMarker), kMaxMarkerBytes, false);
  if (!marker) return std::nullopt;
  const auto field = [&](const char* key) -> const nlohmann::json* {
    const auto it = marker->find(key);
    return it == marker->end() ? nullptr : &*it;
  };
  const auto* m_kind = field("kind");
  const auto* m_pid = field("pid");
  const auto* m_token = field("token");
  const auto* m_target = field("target");
  const auto* m_host = field("host");
  if (!m_kind || !m_pid || !m_token || !m_target || !m_kind->is_string() || !m_pid->is_number_integer() ||
      !m_token->is_string() || !m_target->is_string() || (m_host && !m_host->is_string()))
    return std::nullopt;
  if (*m_kind != name->kind || m_pid->get<long>() != name->pid || *m_token != name->token)
    return std::nullopt;
  // A marker without a host (an older stalesim's) is ours but never taken for dead.
  return Temporary{path, name->kind, name->pid, m_target->get<std::string>(),
                   m_host ? m_host->get<std::string>() : std::string()};
}

namespace {
// A full disk, a quota or a failing device: the write failed, the request was not refused.
bool storage_failed(int err) { return err == ENOSPC || err == EDQUOT || err == EIO || err == EFBIG; }
}  // namespace

fs::path create_temporary(const fs::path& parent, std::string_view kind, const std::string& target) {
  const std::string host = this_host();
  const std::string token = host_tag(host) + random_token();
  const fs::path dir = parent / fmt::format("{}{}-{}-{}", kTempPrefix, kind, ::getpid(), token);
  if (::mkdir(dir.c_str(), 0700) != 0)
    throw IoError(fmt::format("{}: cannot write here: {}", parent.string(), std::strerror(errno)),
                  storage_failed(errno));
  const nlohmann::json marker = {
      {"stalesim_temporary", 1}, {"kind", kind},    {"pid", static_cast<long>(::getpid())}, {"host", host},
      {"token", token},          {"target", target}};
  // Written beside, then renamed: the marker appears whole or not at all, and a kill before the
  // rename leaves a folder unfinished_dead_temporary recognises.
  try {
    write_text_file(dir / std::string(kMarkerPart), marker.dump() + "\n");
    if (std::rename((dir / std::string(kMarkerPart)).c_str(), (dir / std::string(kMarker)).c_str()) != 0)
      throw IoError(
          fmt::format("{}: cannot write: {}", (dir / std::string(kMarker)).string(), std::strerror(errno)));
  } catch (...) {
    ::unlink((dir / std::string(kMarkerPart)).c_str());
    ::rmdir(dir.c_str());
    throw;
  }
  return dir;
}

void clean_stale_temporaries(const fs::path& parent, const std::string& name) {
  std::error_code ec;
  std::vector<Temporary> stale;
  std::vector<fs::path> unfinished;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with(kTempPrefix)) continue;
    auto t = our_temporary(it->path());
    if (!t) {
      if (unfinished_dead_temporary(it->path(), true)) unfinished.push_back(it->path());
      continue;
    }
    if (!dead(*t) || (!name.empty() && t->target != name)) continue;
    stale.push_back(std::move(*t));
  }
  for (const auto& u : unfinished) {  // only these two names, never remove_all
    ::unlink((u / std::string(kMarkerPart)).c_str());
    ::rmdir(u.c_str());
  }
  // A fixed order, whatever the directory's.
  std::sort(stale.begin(), stale.end(),
            [](const Temporary& a, const Temporary& b) { return a.path < b.path; });
  for (const auto& t : stale) {
    std::error_code e;
    const fs::path target = parent / t.target;
    const fs::path old = t.path / "old";  // a replace killed between its two renames: the old run
    if (fs::symlink_status(old, e).type() != fs::file_type::not_found) {
      // Restored under its name when that is free; otherwise kept, with the temporary.
      if (t.target.find('/') != std::string::npos || t.target == "." || t.target == ".." ||
          fs::symlink_status(target, e).type() != fs::file_type::not_found ||
          ::renameat2(AT_FDCWD, old.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0)
        continue;
    }
    fs::remove_all(t.path, e);
  }
}

void write_text_file(const fs::path& path, std::string_view contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)),
                  storage_failed(errno));
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(err)), true);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0)
    throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)), true);
}

namespace {

// Whether what `moved` holds (the entry swapped out of the target) may be removed: a run folder or
// an empty one, as check_target found it before the run.
bool replaceable(const fs::path& moved) {
  const FolderKind k = inspect_folder(moved).kind;
  return k == FolderKind::kRun || k == FolderKind::kEmpty || k == FolderKind::kReport;
}

}  // namespace

void install_by_renames(const fs::path& temporary, const fs::path& target,
                        const std::function<void(std::string_view)>& checkpoint) {
  const auto step = [&](std::string_view s) {
    if (checkpoint) checkpoint(s);
  };
  const fs::path fresh = temporary / "run";
  const fs::path old = temporary / "old";
  if (std::rename(target.c_str(), old.c_str()) != 0)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(errno)));
  step("moved-old");
  const auto put_back = [&](const std::string& why) {
    if (::renameat2(AT_FDCWD, old.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0)
      throw IoError(why);
    // Neither the new run nor the old one could go under the name: the old one stays where it is,
    // in our temporary, which the next write to this folder restores (clean_stale_temporaries);
    // the caller must not remove it (install keeps a temporary holding `old`).
    throw IoError(fmt::format("{}; the old run could not be put back ({}) and is kept in {}", why,
                              std::strerror(errno), old.string()));
  };
  if (!replaceable(old))
    put_back(fmt::format("{}: changed while the run was being written ({}); nothing was deleted",
                         target.string(), inspect_folder(old).why));
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0)
    put_back(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(errno)));
  step("renamed");
  std::error_code ec;
  fs::remove_all(temporary, ec);
  step("removed");
}

void install_folder(const fs::path& temporary, const fs::path& target,
                    const std::function<void(std::string_view)>& checkpoint) {
  const auto step = [&](std::string_view s) {
    if (checkpoint) checkpoint(s);
  };
  const fs::path fresh = temporary / "run";
  std::error_code ec;
  if (fs::symlink_status(target, ec).type() == fs::file_type::not_found) {
    step("rename");
    // Never over anything: another writer may have created the name meanwhile.
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0)
      throw IoError(
          errno == EEXIST || errno == ENOTEMPTY
              ? fmt::format("{}: created by another process while the run was being written; nothing "
                            "was replaced",
                            target.string())
              : fmt::format("{}: cannot create: {}", target.string(), std::strerror(errno)));
    step("renamed");
    fs::remove_all(temporary, ec);
    return;
  }
  step("swap");
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    step("swapped");  // `fresh` now holds what was at the target: checked again before it goes
    if (!replaceable(fresh)) {
      const std::string why = inspect_folder(fresh).why;
      if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0)
        throw IoError(fmt::format(
            "{}: changed while the run was being written ({}), and could not be swapped back ({}): it is "
            "kept in {}",
            target.string(), why, std::strerror(errno), fresh.string()));
      throw IoError(fmt::format("{}: changed while the run was being written ({}); nothing was deleted",
                                target.string(), why));
    }
    fs::remove_all(temporary, ec);
    step("removed");
    return;
  }
  const int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(err)));
  // No atomic exchange on this filesystem: two renames. A kill between them leaves the old run
  // in TEMPORARY/old, which clean_stale_temporaries restores.
  install_by_renames(temporary, target, checkpoint);
}

void install_in_place(const fs::path& temporary, const fs::path& target,
                      const std::function<void(std::string_view)>& checkpoint) {
  // One writer at a time: a lock on the folder itself (no write permission needed, nothing
  // created), held until the files are in; under it the folder must still be empty of runs, so a
  // second writer that checked it at the same time is refused instead of mixing its files in.
  // Access mode 0 (read-only): the folder is opened to lock it, nothing is read.
  const int lock = ::open(target.c_str(), O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (lock < 0) throw IoError(fmt::format("{}: cannot write: {}", target.string(), std::strerror(errno)));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the lock
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0)
    if (errno != EINTR)
      throw IoError(fmt::format("{}: cannot lock: {}", target.string(), std::strerror(errno)));
  if (inspect_folder(target).kind != FolderKind::kEmpty)
    throw IoError(fmt::format(
        "{}: another process wrote into this folder while the run was being written; nothing was written",
        target.string()));
  // summary.json first: from then on the folder reads as an unfinished run (--force replaces
  // it); done last.
  const fs::path fresh = temporary / "run";
  std::error_code ec;
  for (const OutputRow& row : output_table()) {  // summary.json first, done last
    const fs::path f(row.name);
    if (fs::symlink_status(fresh / f, ec).type() != fs::file_type::regular) continue;
    if (checkpoint) checkpoint("place");
    if (::renameat2(AT_FDCWD, (fresh / f).c_str(), AT_FDCWD, (target / f).c_str(), RENAME_NOREPLACE) != 0)
      throw IoError(fmt::format("{}: cannot write: {}", (target / f).string(), std::strerror(errno)));
  }
  if (checkpoint) checkpoint("placed");
  fs::remove_all(temporary, ec);
}

void discard_temporary(const fs::path& temporary) {
  std::error_code ec;
  if (fs::symlink_status(temporary / "old", ec).type() != fs::file_type::not_found) {
    fs::remove_all(temporary / "run", ec);  // the old run stays, with the marker, to be restored
    return;
  }
  fs::remove_all(temporary, ec);
}

void replace_file_checked(const fs::path& path, std::string_view contents,
                          const std::function<bool(const fs::path&)>& ours) {
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string name = path.filename().string();
  clean_stale_temporaries(parent, name);
  const fs::path temporary = create_temporary(parent, "tmp", name);
  const fs::path fresh = temporary / name;
  const auto fail = [&](const std::string& why) {
    std::error_code ec;
    fs::remove_all(temporary, ec);
    throw IoError(why);
  };
  try {
    write_text_file(fresh, contents);
  } catch (const IoError& e) {
    fail(e.what());
  }
  std::error_code ec;
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno != EEXIST) fail(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
    // There is one: replaced only when ours, checked again once swapped out (no check-then-write).
    if (!ours(path))
      fail(fmt::format("{}: exists and is not {}; nothing was written", path.string(), "ours"));
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0)
      fail(fmt::format("{}: cannot replace: {}", path.string(), std::strerror(errno)));
    if (!ours(fresh)) {  // changed between the check and the swap: put it back
      if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0)
        throw IoError(
            fmt::format("{}: changed while being replaced and could not be put back ({}): it is kept "
                        "in {}",
                        path.string(), std::strerror(errno), fresh.string()));
      fail(fmt::format("{}: changed while being replaced; nothing was written", path.string()));
    }
  }
  fs::remove_all(temporary, ec);
}

}  // namespace stalesim
