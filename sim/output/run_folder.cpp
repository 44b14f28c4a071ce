#include "sim/output/run_folder.hpp"

#include <fcntl.h>
#include <signal.h>
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

namespace stalesim {

namespace fs = std::filesystem;

namespace {

bool is_run_file(const std::string& name) {
  return std::find(kRunFiles.begin(), kRunFiles.end(), name) != kRunFiles.end();
}

constexpr std::string_view kTempPrefix = ".stalesim-";
constexpr std::string_view kMarker = ".stalesim-temporary";
constexpr std::uint64_t kMaxMarkerBytes = 64u << 10;

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// 16 hex digits from the kernel's random source (never used for anything simulated).
std::string random_token() {
  std::uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError(fmt::format("cannot draw a random token: {}", std::strerror(errno)));
    got += static_cast<size_t>(n);
  }
  return fmt::format("{:016x}", v);
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::optional<nlohmann::json> read_manifest(const fs::path& p, std::uint64_t max_bytes = kMaxManifestBytes) {
  std::string why;
  auto j = read_json_file(p.string(), max_bytes, why);
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
    if (our_temporary(it->path())) continue;  // a run's or sweep's hidden temporary, proven ours
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

std::optional<Temporary> our_temporary(const fs::path& path) {
  // ".stalesim-KIND-PID-TOKEN"
  const std::string entry = path.filename().string();
  if (!entry.starts_with(kTempPrefix)) return std::nullopt;
  const std::string rest = entry.substr(kTempPrefix.size());
  const size_t d1 = rest.find('-'), d2 = rest.rfind('-');
  if (d1 == std::string::npos || d2 == d1) return std::nullopt;
  const std::string kind = rest.substr(0, d1), digits = rest.substr(d1 + 1, d2 - d1 - 1),
                    token = rest.substr(d2 + 1);
  if (kind != "partial" && kind != "probe" && kind != "tmp") return std::nullopt;
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  if (token.size() != 16 || !is_hex(token)) return std::nullopt;
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() != fs::file_type::directory) return std::nullopt;
  const auto marker = read_manifest(path / std::string(kMarker), kMaxMarkerBytes);
  if (!marker) return std::nullopt;
  const long pid = std::stol(digits);
  const auto field = [&](const char* key) -> const nlohmann::json* {
    const auto it = marker->find(key);
    return it == marker->end() ? nullptr : &*it;
  };
  const auto* m_kind = field("kind");
  const auto* m_pid = field("pid");
  const auto* m_token = field("token");
  const auto* m_target = field("target");
  if (!m_kind || !m_pid || !m_token || !m_target || !m_kind->is_string() || !m_pid->is_number_integer() ||
      !m_token->is_string() || !m_target->is_string())
    return std::nullopt;
  if (*m_kind != kind || m_pid->get<long>() != pid || *m_token != token) return std::nullopt;
  return Temporary{path, kind, pid, m_target->get<std::string>()};
}

fs::path create_temporary(const fs::path& parent, std::string_view kind, const std::string& target) {
  const fs::path dir = parent / fmt::format("{}{}-{}-{}", kTempPrefix, kind, ::getpid(), random_token());
  if (::mkdir(dir.c_str(), 0700) != 0)
    throw IoError(fmt::format("{}: cannot write here: {}", parent.string(), std::strerror(errno)));
  const nlohmann::json marker = {{"stalesim_temporary", 1},
                                 {"kind", kind},
                                 {"pid", static_cast<long>(::getpid())},
                                 {"token", dir.filename().string().substr(dir.filename().string().rfind('-') + 1)},
                                 {"target", target}};
  try {
    write_text_file(dir / std::string(kMarker), marker.dump() + "\n");
  } catch (...) {
    ::rmdir(dir.c_str());
    throw;
  }
  return dir;
}

void clean_stale_temporaries(const fs::path& parent, const std::string& name) {
  std::error_code ec;
  std::vector<Temporary> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with(kTempPrefix)) continue;
    auto t = our_temporary(it->path());
    if (!t || process_alive(t->pid) || (!name.empty() && t->target != name)) continue;
    stale.push_back(std::move(*t));
  }
  // A fixed order, whatever the directory's.
  std::sort(stale.begin(), stale.end(), [](const Temporary& a, const Temporary& b) { return a.path < b.path; });
  for (const auto& t : stale) {
    std::error_code e;
    const fs::path target = parent / t.target;
    const fs::path old = t.path / "old";  // a replace killed between its two renames: the old run
    if (t.target.find('/') == std::string::npos && t.target != "." && t.target != ".." &&
        inspect_folder(old).kind == FolderKind::kRun && inspect_folder(target).kind == FolderKind::kAbsent) {
      fs::rename(old, target, e);
      if (e) continue;  // keep it all rather than lose the run
    }
    fs::remove_all(t.path, e);
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

void install_folder(const fs::path& temporary, const fs::path& target,
                    const std::function<void(std::string_view)>& checkpoint) {
  const auto step = [&](std::string_view s) {
    if (checkpoint) checkpoint(s);
  };
  const fs::path fresh = temporary / "run";
  std::error_code ec;
  if (fs::symlink_status(target, ec).type() == fs::file_type::not_found) {
    step("rename");
    if (std::rename(fresh.c_str(), target.c_str()) != 0)
      throw IoError(fmt::format("{}: cannot create: {}", target.string(), std::strerror(errno)));
    step("renamed");
    fs::remove_all(temporary, ec);
    return;
  }
  step("swap");
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    step("swapped");  // `fresh` now holds the old run
    fs::remove_all(temporary, ec);
    step("removed");
    return;
  }
  const int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(err)));
  // No atomic exchange on this filesystem: two renames. A kill between them leaves the old run
  // in TEMPORARY/old, which clean_stale_temporaries restores.
  const fs::path old = temporary / "old";
  if (std::rename(target.c_str(), old.c_str()) != 0)
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(errno)));
  step("moved-old");
  if (std::rename(fresh.c_str(), target.c_str()) != 0) {
    const int e2 = errno;
    std::rename(old.c_str(), target.c_str());
    throw IoError(fmt::format("{}: cannot replace: {}", target.string(), std::strerror(e2)));
  }
  step("renamed");
  fs::remove_all(temporary, ec);
  step("removed");
}

void install_in_place(const fs::path& temporary, const fs::path& target,
                      const std::function<void(std::string_view)>& checkpoint) {
  // summary.json first: from then on the folder reads as an unfinished run (--force replaces
  // it); done last.
  std::vector<std::string> order = {"summary.json"};
  for (const auto f : kRunFiles)
    if (f != "summary.json" && f != "done") order.emplace_back(f);
  order.emplace_back("done");
  const fs::path fresh = temporary / "run";
  std::error_code ec;
  for (const auto& f : order) {
    if (fs::symlink_status(fresh / f, ec).type() != fs::file_type::regular) continue;
    if (checkpoint) checkpoint("place");
    if (std::rename((fresh / f).c_str(), (target / f).c_str()) != 0)
      throw IoError(fmt::format("{}: cannot write: {}", (target / f).string(), std::strerror(errno)));
  }
  if (checkpoint) checkpoint("placed");
  fs::remove_all(temporary, ec);
}

}  // namespace stalesim
