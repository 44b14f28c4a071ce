// Profiles as data (issue 20 point 5): a device profile file, written by hand or by
// `stalesim calibrate`, is used by a scenario without rebuilding; its figures go into the
// manifest so that `reproduce` does not need the file; a bad file is exit 2 naming file and key.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "models/device_profile.hpp"
#include "models/profile_calibration.hpp"
#include "sim/scenario/load.hpp"
#include "sim/scenario/to_json.hpp"

using namespace stalesim;
using stalesim::testing::run_cli;
using stalesim::testing::slurp;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("stalesim-prof-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

// gtx1060's figures under another name, with `efficiency` and one key replaced as given.
json my_profile(double efficiency = 0.5) {
  json j = json(profile_to_json(*find_profile("gtx1060")));
  j["name"] = "my-gpu";
  j["efficiency"] = efficiency;
  j["source"] = "written by hand for a test";
  return j;
}

// The golden tiny scenario with its first group's profile replaced (and timed by it: the golden
// group's explicit iteration_ms removed).
std::string tiny_with_profile(const std::string& profile) {
  json s = json::parse(slurp(fs::path(STALESIM_SOURCE_DIR) / "tests/golden/tiny/scenario.json"));
  s["cluster"]["workers"][0]["profile"] = profile;
  s["cluster"]["workers"][0].erase("iteration_ms");
  s.erase("comment");
  return s.dump(2);
}

// profile_from_json's error message for j, or "accepted".
std::string problem(const json& j) {
  try {
    profile_from_json(j);
  } catch (const ProfileError& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

}  // namespace

TEST_CASE("every built-in profile reads back from the document profile_to_json writes") {
  for (const auto& p : builtin_profiles()) {
    CAPTURE(p.name);
    CHECK(profile_from_json(json(profile_to_json(p))) == p);
  }
}

TEST_CASE("a profile document with a bad key, type or figure is refused naming the key") {
  json j = my_profile(1.5);
  CHECK(problem(j) == "/efficiency: expected a number in (0, 1], got 1.5");
  j = my_profile();
  j.erase("overhead_us");
  CHECK(problem(j) == "/overhead_us: required");
  j = my_profile();
  j["peak_fp32_tflop"] = 3;
  CHECK(problem(j).starts_with("/peak_fp32_tflop: unknown key; allowed: name, description"));
  j = my_profile();
  j["peak_fp32_tflops"] = "fast";
  CHECK(problem(j) == "/peak_fp32_tflops: expected a number, got \"fast\"");
  j = my_profile();
  j["source"] = "";
  CHECK(problem(j).starts_with("/source: expected a non-empty string"));
  CHECK(problem(my_profile()) == "accepted");
}

TEST_CASE("a scenario names a profile file relative to its folder and the manifest keeps its figures") {
  const fs::path d = fresh("load");
  fs::create_directories(d / "profiles");
  write(d / "profiles/my-gpu.json", my_profile(0.25).dump(2));
  write(d / "s.json", tiny_with_profile("profiles/my-gpu.json"));
  const Scenario s = load_scenario_file((d / "s.json").string());
  const auto& g = s.cluster.workers[0];
  CHECK(g.profile == (d / "profiles/my-gpu.json").lexically_normal().string());
  REQUIRE(g.device);
  CHECK(g.device->name == "my-gpu");
  CHECK(g.device->efficiency == 0.25);
  CHECK(group_profile(g, 0) == *g.device);
  CHECK_FALSE(s.cluster.workers[1].device);  // a built-in stays a name
  // The manifest's scenario loads back equal without the file (what reproduce does).
  fs::remove(d / "profiles/my-gpu.json");
  CHECK(parse_scenario(scenario_to_json(s), "manifest") == s);
  fs::remove_all(d);
}

TEST_CASE("a profile file runs without rebuilding, its figures set the pace, and reproduce needs no file") {
  const fs::path d = fresh("run");
  // The same figures as the built-in gtx1060: the same run, byte for byte, but for the manifest.
  json same = json(profile_to_json(*find_profile("gtx1060")));
  write(d / "same.json", same.dump(2));
  json slow = my_profile(0.05);
  slow["overhead_us"] = 2000;  // the tiny model's compute is all overhead
  write(d / "slow.json", slow.dump(2));
  write(d / "s-builtin.json", tiny_with_profile("gtx1060"));
  write(d / "s-same.json", tiny_with_profile("same.json"));
  write(d / "s-slow.json", tiny_with_profile("slow.json"));
  const auto builtin =
      run_cli("run " + (d / "s-builtin.json").string() + " --quiet --out " + (d / "builtin").string());
  REQUIRE_MESSAGE(builtin.code == 0, builtin.err);
  const auto a = run_cli("run " + (d / "s-same.json").string() + " --quiet --out " + (d / "same").string());
  REQUIRE_MESSAGE(a.code == 0, a.err);
  const auto b = run_cli("run " + (d / "s-slow.json").string() + " --quiet --out " + (d / "slow").string());
  REQUIRE_MESSAGE(b.code == 0, b.err);
  CHECK(slurp(d / "same/metrics.csv") == slurp(d / "builtin/metrics.csv"));
  CHECK(slurp(d / "same/staleness.csv") == slurp(d / "builtin/staleness.csv"));
  // A tenth of the efficiency and ten times the overhead: the first group's iterations are much
  // slower, so the run differs.
  CHECK(slurp(d / "slow/metrics.csv") != slurp(d / "builtin/metrics.csv"));
  const json summary = json::parse(slurp(d / "slow/summary.json"));
  const json& group = summary["manifest"]["scenario"]["cluster"]["workers"][0];
  CHECK(group["device"]["efficiency"] == 0.05);
  CHECK(group["device"]["name"] == "my-gpu");
  fs::remove(d / "slow.json");
  const auto r = run_cli("reproduce " + (d / "slow/summary.json").string());
  CHECK_MESSAGE(r.code == 0, (r.out + r.err));
  fs::remove_all(d);
}

TEST_CASE("a bad or missing profile file is exit 2 naming the scenario, the file and the key") {
  const fs::path d = fresh("bad");
  write(d / "bad.json", my_profile(1.5).dump(2));
  write(d / "s.json", tiny_with_profile("bad.json"));
  const auto v = run_cli("validate " + (d / "s.json").string());
  CHECK(v.code == 2);
  CHECK(v.err.find((d / "s.json").string() + ": /cluster/workers/0/profile: ") != std::string::npos);
  CHECK(v.err.find((d / "bad.json").string() + ": /efficiency: expected a number in (0, 1], got 1.5") !=
        std::string::npos);
  write(d / "s.json", tiny_with_profile("nowhere.json"));
  const auto m = run_cli("run " + (d / "s.json").string() + " --quiet --out " + (d / "out").string());
  CHECK(m.code == 2);
  CHECK(m.err.find((d / "nowhere.json").string() + ": cannot read: No such file or directory") !=
        std::string::npos);
  write(d / "s.json", tiny_with_profile("gtx9999"));
  const auto u = run_cli("validate " + (d / "s.json").string());
  CHECK(u.code == 2);
  CHECK(u.err.find("unknown device profile \"gtx9999\"; built-in: a100,") != std::string::npos);
  const auto p = run_cli("profiles " + (d / "bad.json").string());
  CHECK(p.code == 2);
  CHECK(p.err.find("/efficiency") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("a profile name not built in is found as NAME.json in STALESIM_PROFILE_DIR") {
  const fs::path d = fresh("dir");
  fs::create_directories(d / "lib");
  write(d / "lib/my-gpu.json", my_profile().dump(2));
  write(d / "s.json", tiny_with_profile("my-gpu"));
  const auto without = run_cli("validate " + (d / "s.json").string());
  CHECK(without.code == 2);
  const auto with =
      run_cli("validate " + (d / "s.json").string(), "STALESIM_PROFILE_DIR=" + (d / "lib").string() + " ");
  REQUIRE_MESSAGE(with.code == 0, with.err);
  const json resolved = json::parse(with.out);
  CHECK(resolved["cluster"]["workers"][0]["profile"] == (d / "lib/my-gpu.json").string());
  CHECK(resolved["cluster"]["workers"][0]["device"]["name"] == "my-gpu");
  const auto list = run_cli("profiles " + (d / "lib/my-gpu.json").string());
  CHECK(list.code == 0);
  CHECK(list.out.find("my-gpu") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("a device object in a scenario given as JSON is checked as a profile file is") {
  json s = json::parse(tiny_with_profile("my-gpu.json"));
  json dev = my_profile();
  dev.erase("peak_fp32_tflops");
  s["cluster"]["workers"][0]["device"] = dev;
  CHECK_THROWS_WITH_AS(parse_scenario(s, "m.json"),
                       "m.json: /cluster/workers/0/device/peak_fp32_tflops: expected a number > 0, got 0",
                       ScenarioError);
  s["cluster"]["workers"][0]["device"] = my_profile();
  CHECK(parse_scenario(s, "m.json").cluster.workers[0].device->name == "my-gpu");
  s["cluster"]["workers"][0]["profile"] = "gtx1060";  // figures for a built-in name: refused
  CHECK_THROWS_WITH_AS(parse_scenario(s, "m.json"),
                       "m.json: /cluster/workers/0/device: applies to a profile file only; \"gtx1060\" is "
                       "built-in: remove device",
                       ScenarioError);
  s["cluster"]["workers"][0]["profile"] = "my-gpu.json";  // a file named but never read
  s["cluster"]["workers"][0].erase("device");
  CHECK_THROWS_WITH_AS(parse_scenario(s, "m.json"),
                       "m.json: /cluster/workers/0/profile: the profile file \"my-gpu.json\" was not read (a "
                       "scenario given as JSON, not as a file, must carry its figures in device)",
                       ScenarioError);
}

// Calibration against published figures (issue 29, point 5): the fit, the figures the GTX 1080 Ti
// profile cites, the checks on a figure, and what `stalesim profiles` prints.
TEST_CASE("the fitted efficiency recovers the efficiency that made the figures") {
  const DeviceProfile p = *find_profile("gtx1080ti");
  std::vector<CalibrationFigure> figs;
  for (const double flops : {7.6e9, 1.52e10, 2.26e10}) {
    CalibrationFigure f{"synthetic", "net", flops, 16, 1.0};
    f.images_per_s = predicted_images_per_s(p, f, 0.37);
    figs.push_back(f);
  }
  CHECK(*fitted_efficiency(p, figs) == doctest::Approx(0.37).epsilon(1e-9));
  CHECK_FALSE(fitted_efficiency(p, {}).has_value());
}

TEST_CASE("the GTX 1080 Ti profile cites published figures and runs at their least-squares fit") {
  // Issue 44: devices as published. The shipped efficiency is the fit to three digits.
  const DeviceProfile p = *find_profile("gtx1080ti");
  const auto figs = builtin_calibration("gtx1080ti");
  REQUIRE(figs.size() >= 2);
  // Two publishers, each with at least two figures: Johnson's Torch runs and Lambda's TensorFlow runs.
  const auto citing = [&](const char* who) {
    return std::count_if(figs.begin(), figs.end(),
                         [&](const CalibrationFigure& f) { return f.source.find(who) != std::string::npos; });
  };
  CHECK(citing("cnn-benchmarks") >= 2);
  CHECK(citing("lambdalabs.com") >= 2);
  CHECK(citing("cnn-benchmarks") + citing("lambdalabs.com") == static_cast<std::ptrdiff_t>(figs.size()));
  const double fit = *fitted_efficiency(p, figs);
  CHECK(p.efficiency == 0.424);
  CHECK(fit == doctest::Approx(0.424).epsilon(0.0012));  // within half the third digit
  // The fit is the least-squares one: it beats the old assumed 0.5 and any nearby efficiency.
  const auto sse = [&](double e) {
    double s = 0;
    for (const auto& f : figs) {
      const double t = 16.0 / f.images_per_s, pred = 16.0 / predicted_images_per_s(p, f, e);
      s += (pred - t) * (pred - t) / (t * t);
    }
    return s;
  };
  CHECK(sse(fit) < sse(0.5));
  CHECK(sse(fit) < sse(fit * 1.01));
  CHECK(sse(fit) < sse(fit * 0.99));
  CHECK(builtin_calibration("gtx1060").empty());  // no published figure found: derived instead
}

TEST_CASE(
    "the GTX 1060 takes the GTX 1080 Ti's fit, and the one published pair of both cross-checks the gap") {
  const DeviceProfile slow = *find_profile("gtx1060");
  const DeviceProfile fast = *find_profile("gtx1080ti");
  CHECK(builtin_derived_from("gtx1060") == "gtx1080ti");
  CHECK(slow.efficiency == fast.efficiency);
  CHECK(slow.overhead_us == fast.overhead_us);
  // The Keras cifar10_cnn example's layers (conv 32 same, conv 32, pool, conv 64 same, conv 64,
  // pool, dense 512, dense 10 on 32x32x3): 20,741,120 multiply-adds forward, three times that in
  // training. A batch of 100 on each profile, as the published pair (9 s and 4 s an epoch, whole
  // seconds: a ratio between 8.5 / 4.5 and 9.5 / 3.5).
  const double train_flops = 3.0 * 2.0 * 20'741'120.0 * 100;
  const auto ms = [&](const DeviceProfile& p) {
    return train_flops / (p.peak_fp32_tflops * 1e12 * p.efficiency) * 1e3 + p.overhead_us * 1e-3;
  };
  const double ratio = ms(slow) / ms(fast);
  CHECK(ratio == doctest::Approx(2.48).epsilon(0.002));  // the figure the profile's source quotes
  CHECK(ratio > 8.5 / 4.5);
  CHECK(ratio < 9.5 / 3.5);
  CHECK(slow.source.find("2.48x") != std::string::npos);
}

TEST_CASE("a profile with calibration figures states their fit, and a derived one its base's figures") {
  json figured = my_profile();
  figured["calibration"] = json::array(
      {{{"source", "s"}, {"model", "m"}, {"forward_flops", 1e9}, {"batch", 16}, {"images_per_s", 1000}}});
  // 3e9 x 16 FLOP in 16 ms less the 200 us overhead on 4.375 TFLOP/s: efficiency 0.694.
  CHECK(problem(figured).starts_with(
      "/efficiency: expected the fit to the profile's 1 calibration figures, 0.694 "));
  figured["efficiency"] = 0.694;
  CHECK(problem(figured) == "accepted");
  json derived = my_profile(0.424);
  derived["derived_from"] = "gtx1080ti";
  CHECK(problem(derived) == "accepted");
  derived["overhead_us"] = 250;
  CHECK(problem(derived) ==
        "/overhead_us: derived from gtx1080ti: expected its efficiency 0.424 and overhead_us 200, got 0.424 "
        "and 250");
  derived["overhead_us"] = 200;
  derived["derived_from"] = "a100";  // no calibration figures
  CHECK(problem(derived) ==
        "/derived_from: expected the name of a built-in profile with calibration figures, got \"a100\"");
}

TEST_CASE("a bad calibration figure is refused naming its entry and key") {
  json good = my_profile(0.0687);  // the fit to the one figure below
  good["calibration"] = json::array(
      {{{"source", "s"}, {"model", "m"}, {"forward_flops", 1e9}, {"batch", 16}, {"images_per_s", 100}}});
  CHECK(problem(good) == "accepted");
  json j = good;
  j["calibration"][0]["batch"] = 0;
  CHECK(problem(j) == "/calibration/0/batch: expected an integer >= 1");
  j = good;
  j["calibration"][0]["fps"] = 1;
  CHECK(problem(j) ==
        "/calibration/0/fps: unknown key; allowed: source, model, forward_flops, batch, images_per_s");
  j = good;
  j["calibration"] = 3;
  CHECK(problem(j) == "/calibration: expected an array, got 3");
}

TEST_CASE("stalesim profiles shows the fitted efficiency, the sources and the error against each figure") {
  const auto out = run_cli("profiles");
  REQUIRE(out.code == 0);
  CHECK(out.out.find("gtx1080ti: efficiency 0.424, what runs use, is the least-squares fit to 5 published "
                     "figures (0.4243):") != std::string::npos);
  CHECK(
      out.out.find("ResNet-50 (ImageNet, 224x224), batch 16: published 158.09 images/s; predicted +33.0%") !=
      std::string::npos);
  CHECK(out.out.find("gtx1060: efficiency 0.424 and overhead 200 us, what runs use, are gtx1080ti's") !=
        std::string::npos);
  CHECK(
      out.out.find("gtx1080ti  resnet110 batch 32: 10.4, batch 128: 40.9; resnet50-cifar batch 128: 207.5") !=
      std::string::npos);
  CHECK(out.out.find("source: Justin Johnson, cnn-benchmarks") != std::string::npos);
}
