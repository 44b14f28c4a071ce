#include "sim/run_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace stalesim {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxManifestBytes = 64u << 20;  // a summary.json or sweep.json we read back

bool is_run_file(const std::string& name) {
  return std::find(kRunFiles.begin(), kRunFiles.end(), name) != kRunFiles.end();
}

// ".NAME.KIND-PID" for KIND in partial, old, probe, tmp: the PID, else nullopt. `name` empty:
// any NAME.
std::optional<long> temporary_pid(const std::string& entry, const std::string& name) {
  if (entry.size() < 3 || entry[0] != '.') return std::nullopt;
  const size_t dash = entry.rfind('-');
  if (dash == std::string::npos || dash + 1 >= entry.size()) return std::nullopt;
  const std::string digits = entry.substr(dash + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 9)
    return std::nullopt;
  const size_t dot = entry.rfind('.', dash);
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const std::string kind = entry.substr(dot + 1, dash - dot - 1);
  if (kind != "partial" && kind != "old" && kind != "probe" && kind != "tmp") return std::nullopt;
  if (!name.empty() && entry.substr(1, dot - 1) != name) return std::nullopt;
  return std::stol(digits);
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::optional<nlohmann::json> read_manifest(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec))) return std::nullopt;
  const auto size = fs::file_size(p, ec);
  if (ec || size > kMaxManifestBytes) return std::nullopt;
  std::ifstream f(p, std::ios::binary);
  std::string text(static_cast<size_t>(size), '\0');
  f.read(text.data(), static_cast<std::streamsize>(size));
  if (!f) return std::nullopt;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::string quoted(const std::string& name) { return fmt::format("'{}'", name); }

// Whether every entry of `dir` is a regular file a run writes (a run's temporary folder).
bool only_run_files(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_run_file(it->path().filename().string()) || !it->is_regular_file(ec) || it->is_symlink(ec))
      return false;
  }
  return !ec;
}

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

}  // namespace

FolderCheck inspect_folder(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || st.type() == fs::file_type::not_found) return {FolderKind::kAbsent, ""};
  if (st.type() == fs::file_type::symlink) return {FolderKind::kOther, "is a symbolic link"};
  if (st.type() != fs::file_type::directory) return {FolderKind::kOther, "exists and is not a folder"};
  bool any = false, run_files = false, summary = false, sweep_manifest = false, sweep_items = false;
  for (fs::directory_iterator it(path, ec), end; it != end; it.increment(ec)) {
    if (ec) break;
    any = true;
    const std::string name = it->path().filename().string();
    const fs::file_status es = it->symlink_status(ec);
    if (temporary_pid(name, "")) continue;  // ours: hidden temporaries of a run or sweep
    if (es.type() == fs::file_type::regular && is_run_file(name)) {
      run_files = true;
      summary = summary || name == "summary.json";
      continue;
    }
    if (es.type() == fs::file_type::regular && (name == "sweep.json" || name == "sweep.csv")) {
      sweep_items = true;
      sweep_manifest = sweep_manifest || name == "sweep.json";
      continue;
    }
    if (es.type() == fs::file_type::directory) {
      // A sweep's point folder: a run folder, or empty.
      const FolderCheck sub = inspect_folder(it->path());
      if (sub.kind == FolderKind::kRun || sub.kind == FolderKind::kEmpty) {
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

void refuse_protected(const std::string& dir, const fs::path& target, const std::vector<fs::path>& protect) {
  const fs::path t = canonical_or_self(target);
  const auto refuse = [&](const std::string& why) {
    throw IoError(
        fmt::format("{}: --force will not replace {} ({}); nothing was deleted", dir, why, t.string()));
  };
  if (t == t.root_path()) refuse("a filesystem root");
  std::error_code ec;
  if (fs::exists(t / ".git", ec)) refuse("a git checkout");
  if (const char* home = std::getenv("HOME"); home && *home && within(canonical_or_self(home), t))
    refuse(canonical_or_self(home) == t ? "the home folder" : "a folder that holds the home folder");
  if (const fs::path cwd = fs::current_path(ec); !ec && within(canonical_or_self(cwd), t))
    refuse(canonical_or_self(cwd) == t ? "the working directory"
                                       : "a folder that holds the working directory");
  for (const auto& p : protect)
    if (!p.empty() && within(canonical_or_self(p), t))
      refuse(fmt::format("a folder that holds {}", p.string()));
}

void clean_stale_temporaries(const fs::path& parent, const std::string& name) {
  std::error_code ec;
  struct Stale {
    fs::path path;
    std::string kind;    // partial, old, probe or tmp
    std::string target;  // the NAME it belongs to
    bool operator<(const Stale& o) const { return path < o.path; }
  };
  std::vector<Stale> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    const auto pid = temporary_pid(entry, name);
    if (!pid || process_alive(*pid)) continue;
    const size_t dot = entry.rfind('.', entry.rfind('-'));
    stale.push_back(
        {it->path(), entry.substr(dot + 1, entry.rfind('-') - dot - 1), entry.substr(1, dot - 1)});
  }
  std::sort(stale.begin(), stale.end());  // a fixed order, whatever the directory's
  for (const auto& [p, kind, of] : stale) {
    const fs::path target = parent / of;
    std::error_code e;
    const fs::file_status st = fs::symlink_status(p, e);
    if (st.type() == fs::file_type::regular && kind == "tmp") {
      fs::remove(p, e);  // a sweep.csv or sweep.json being written
      continue;
    }
    if (st.type() != fs::file_type::directory) continue;
    const FolderCheck c = inspect_folder(p);
    if (kind == "old" && c.kind == FolderKind::kRun && inspect_folder(target).kind == FolderKind::kAbsent) {
      fs::rename(p, target, e);  // a replace killed between its renames: the old run comes back
      if (!e) continue;
    }
    if (c.kind == FolderKind::kRun || c.kind == FolderKind::kEmpty || c.kind == FolderKind::kSweep ||
        only_run_files(p))
      fs::remove_all(p, e);
  }
}

void write_text_file(const fs::path& path, std::string_view contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(err)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0)
    throw IoError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
}

void install_folder(const fs::path& fresh, const fs::path& target,
                    const std::function<void(std::string_view)>& checkpoint) {
  const auto step = [&](std::string_view s) {
    if (checkpoint) checkpoint(s);
  };
  std::error_code ec;
  if (fs::symlink_status(target, ec).type() == fs::file_type::not_found) {
    step("rename");
    if (std::rename(fresh.c_str(), target.c_str()) != 0)
      throw IoError(fmt::format("{}: cannot create: {}", target.string(), std::strerror(errno)));
    step("renamed");
    return;
  }
  step("swap");
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    step("swapped");  // `fresh` now holds the old run
    fs::remove_all(fresh, ec);
    step("removed");
    return;
  }
  const int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(err)));
  // No atomic exchange on this filesystem: two renames. A kill between them leaves the old run
  // in .NAME.old-PID, which clean_stale_temporaries restores.
  const fs::path old =
      target.parent_path() / fmt::format(".{}.old-{}", target.filename().string(), ::getpid());
  if (std::rename(target.c_str(), old.c_str()) != 0)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(errno)));
  step("moved-old");
  if (std::rename(fresh.c_str(), target.c_str()) != 0) {
    const int e2 = errno;
    std::rename(old.c_str(), target.c_str());
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(e2)));
  }
  step("renamed");
  fs::remove_all(old, ec);
  step("removed");
}

}  // namespace stalesim
