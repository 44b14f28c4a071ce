// Device profiles named by a scenario: a profile file's path, reading profile files into the
// groups' `device` when a scenario file is loaded, and the profile of a group.
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "models/device_profile.hpp"
#include "sim/scenario/detail.hpp"

namespace stalesim {

using scenario_detail::json;

// The files a scenario file names (a profile file, a jitter trace) are relative to the file's own
// folder, so that a scenario and the files beside it run from any working directory; a path given
// on the command line (--set, --grid) is relative to the working directory, like every other path
// typed there (issue 32). Called before the overrides apply: it rewrites the file's relative paths
// to paths from the working directory, and the overrides' paths are left as typed.
void scenario_detail::resolve_file_paths(json& doc, const std::string& scenario_path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(scenario_path).parent_path();
  if (dir.empty() || !doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object()) return;
  const auto resolve = [&](json& v, bool profile) {
    if (!v.is_string()) return;  // the loader names the wrong type
    const std::string value = v.get<std::string>();
    if (value.empty() || (profile && !value.ends_with(".json")))
      return;  // a built-in or $STALESIM_PROFILE_DIR name
    const fs::path p(value);
    if (!p.is_absolute()) v = (dir / p).lexically_normal().string();
  };
  const auto jitter_path = [&](json& owner) {
    if (owner.is_object() && owner.contains("jitter") && owner["jitter"].is_object() &&
        owner["jitter"].contains("path"))
      resolve(owner["jitter"]["path"], false);
  };
  json& cluster = doc["cluster"];
  jitter_path(cluster);
  if (!cluster.contains("workers") || !cluster["workers"].is_array()) return;
  for (json& group : cluster["workers"]) {
    if (!group.is_object()) continue;
    if (group.contains("profile")) resolve(group["profile"], true);
    jitter_path(group);
  }
}

// Profiles as data (issue 20): each group whose profile names a file and that carries no `device`
// yet gets the file's figures as `device`, and its profile the path as resolved, so that the
// manifest shows which file ran and reproduces without it. Errors name the scenario, the group's
// profile key, the profile file and its key.
void scenario_detail::read_profile_files(json& doc, const std::string& scenario_path,
                                         const std::string& profile_dir) {
  if (!doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object()) return;
  json& cluster = doc["cluster"];
  if (!cluster.contains("workers") || !cluster["workers"].is_array()) return;
  const std::string dir;  // resolve_file_paths made the file's paths relative to the working directory
  for (size_t g = 0; g < cluster["workers"].size(); ++g) {
    json& group = cluster["workers"][g];
    if (!group.is_object() || group.contains("device") || !group.contains("profile") ||
        !group["profile"].is_string())
      continue;
    const auto file = profile_file_path(group["profile"].get<std::string>(), dir, profile_dir);
    if (!file) continue;  // a built-in name, or unknown (the loader says so)
    try {
      group["device"] = json(profile_to_json(load_profile_file(*file)));
    } catch (const ProfileError& e) {
      throw ScenarioError(fmt::format("{}: /cluster/workers/{}/profile: {}", scenario_path, g, e.what()));
    }
    group["profile"] = *file;
  }
}

std::optional<std::string> profile_file_path(const std::string& value, const std::string& scenario_dir,
                                             const std::string& profile_dir) {
  namespace fs = std::filesystem;
  if (value.ends_with(".json")) {
    const fs::path p(value);
    return (p.is_absolute() || scenario_dir.empty() ? p : fs::path(scenario_dir) / p)
        .lexically_normal()
        .string();
  }
  if (find_profile(value)) return std::nullopt;
  if (profile_dir.empty() || value.find('/') != std::string::npos) return std::nullopt;
  const fs::path p = fs::path(profile_dir) / (value + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  return p.lexically_normal().string();
}

DeviceProfile group_profile(const WorkerGroup& g, size_t index) {
  if (g.device) return *g.device;
  if (auto p = find_profile(g.profile)) return *p;
  throw ScenarioError(
      fmt::format("/cluster/workers/{}/profile: unknown device profile \"{}\"", index, g.profile));
}

}  // namespace stalesim
