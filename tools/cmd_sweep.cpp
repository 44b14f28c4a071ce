// `stalesim sweep SCENARIO | FILE.sweep.json`: a grid of variants and seeds of a scenario, one
// folder each, resumable, split over the ranks of an mpirun (sim/sweep/sweep.hpp,
// sim/sweep/sweep_mpi.hpp; REFERENCE.md "Sweeps and reproduction").

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "models/dataset.hpp"
#include "sim/build_info.hpp"
#include "sim/estimate/memory_estimate.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_mpi.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "tools/cli.hpp"
#include "tools/cmd_estimate.hpp"

namespace stalesim::cli {

namespace {

// The sweep on this process: one rank of an mpirun (mpi != nullptr) or the whole machine.
int sweep_body(const std::vector<std::string>& args, const MpiSession* mpi) {
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;
  po::options_description o(
      "Usage: stalesim sweep SCENARIO [--grid PATH=V1,V2,...]... [--zip PATH=V1,V2,...]... "
      "[options]\n       stalesim sweep FILE.sweep.json [options]\n\nOptions");
  o.add_options()("scenario", po::value<std::string>()->required(),
                  "base scenario JSON file, or a sweep file")(
      "grid", po::value<std::vector<std::string>>()->composing(),
      "sweep a field over values, e.g. --grid policy.staleness=0,1,2,4 (repeatable: the cartesian product, "
      "the first --grid varying slowest)")(
      "zip", po::value<std::vector<std::string>>()->composing(),
      "values advanced together, e.g. --zip optimizer.lr=0.1,0.05 --zip optimizer.batch_size=32,64 "
      "(equal lengths; vary faster than the grid)")(
      "seeds", po::value<std::string>(),
      "seeds of every point, varying fastest: 1..5 or 1,3,9 (default: the scenario's seed)")(
      "jobs,j", po::value<int>()->default_value(1), "points run at once on this machine (threads)")(
      "threads", po::value<int>(),
      "threads computing each point's gradients (default: STALESIM_THREADS, else the machine's cores, "
      "divided by --jobs)")("out", po::value<std::string>(),
                            "sweep folder (default: RESULTS/<scenario name>-sweep, RESULTS: --results)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field of every point, e.g. --set stop.max_updates=1000 (repeatable)")(
      "force",
      "rerun every point, each replacing its own folder when its new run is written (nothing is deleted "
      "first)")("quiet", "no progress bar, notes or wall time on stderr")("help,h", "show this help");
  add_results_option(o);
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    if (rank == 0)
      std::cout << o << R"(
Each point (the scenario + --set + its grid values and seed, fully resolved) runs into
DIR/<name>/ (its swept values and seed, then 8 hex digits of its hash: type=ssp_staleness=2_seed=1-5c0e3a4d)
with the files of a lone 'stalesim run'; identical points share a folder. A folder
that already holds the point's finished run is skipped, so rerunning a sweep resumes it.
DIR/sweep.csv has one row per point in grid order. A failed point does not stop the others.
Under 'mpirun -n K stalesim sweep ...' (a build with MPI) the ranks split the points.
A sweep file (REFERENCE.md "Sweep files"; 'stalesim schema --sweep') gives the base scenario, grid, zip,
seeds, derived fields and constraints itself; --set, --out, --jobs and --force still apply.
Exit codes: 0 every point ok, 2 bad input, 3 a point failed, 130 interrupted.
)";
    return kExitOk;
  }
  const auto strings = [&](const char* key) {
    return p.vm.count(key) ? p.vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  SweepSpec spec;
  std::string file_out;  // the sweep file's "out"
  const std::string input = p.vm["scenario"].as<std::string>();
  const bool from_file = is_sweep_file(input);
  if (from_file) {
    for (const char* flag : {"grid", "zip", "seeds"})
      if (p.vm.count(flag))
        throw UsageError(
            fmt::format("--{}: {} is a sweep file, which gives grid, zip and seeds itself; edit the "
                        "file, or drop --{}",
                        flag, input, flag));
    spec = load_sweep_file(input, &file_out);
  } else {
    spec.scenario_path = input;
  }
  spec.profile_dir = env("STALESIM_PROFILE_DIR");
  for (const auto& s : strings("set")) spec.sets.push_back(parse_override(s));
  const int jobs = p.vm["jobs"].as<int>();
  if (jobs < 1) throw UsageError(fmt::format("--jobs: expected an integer >= 1, got {}", jobs));
  const bool quiet = p.vm.count("quiet") > 0;
  const bool force = p.vm.count("force") > 0;
  SweepPlan plan;
  try {
    for (const auto& g : strings("grid")) spec.grid.push_back(parse_sweep_key(g, "--grid"));
    for (const auto& z : strings("zip")) spec.zip.push_back(parse_sweep_key(z, "--zip"));
    if (p.vm.count("seeds")) spec.seeds = parse_seeds(p.vm["seeds"].as<std::string>());
    const bool planning_tty = rank == 0 && !quiet && ::isatty(STDERR_FILENO);
    plan = plan_sweep(spec, [&](size_t done, size_t total) {
      if (planning_tty) fmt::print(stderr, "\r\033[Kplanning the sweep: {}/{} points resolved", done, total);
    });
    if (planning_tty) fmt::print(stderr, "\r\033[K");
  } catch (const SweepError& e) {
    throw UsageError(e.what());
  }
  // A grid value that makes a point invalid is bad input, found before anything runs.
  {
    std::string bad;
    size_t count = 0;
    for (const auto& pt : plan.points)
      if (!pt.scenario && ++count <= 3)
        bad += fmt::format("\n  point {} ({}): {}", pt.index, describe_point(plan, pt.index), pt.error);
    if (count > 0)
      throw UsageError(fmt::format("{} of {} sweep points are invalid; nothing was run:{}{}", count,
                                   plan.points.size(), bad,
                                   count > 3 ? fmt::format("\n  and {} more", count - 3) : std::string()));
  }
  const std::string dir = display_path(p.vm.count("out")   ? p.vm["out"].as<std::string>()
                                       : !file_out.empty() ? file_out
                                                           : default_sweep_dir(plan, results_root(p.vm)));

  // Rank 0 checks that every point fits in memory (the limit `run` checks), then prepares the
  // folder; every rank follows its verdict. A refused sweep runs and writes nothing.
  const auto prepare = [&] {
    check_sweep_memory(plan, memory_limit(env("STALESIM_MEMORY_LIMIT")), threads_option(p.vm, jobs), jobs);
    const OutputGuard guard = output_guard(spec.scenario_path);
    auto protect = guard.protect;
    if (from_file) protect.emplace_back(input);
    prepare_sweep_dir(dir, plan, force, protect, guard.home);
  };
  const auto refuse = [](const std::exception& e) { fmt::print(stderr, "stalesim: {}\n", e.what()); };
  if (!prepare_on_rank0(mpi, prepare, refuse)) return kExitBadInput;
  if (rank == 0 && !quiet) {
    fmt::print(stderr, "{}", describe_sweep_estimate(plan, jobs * ranks, threads_option(p.vm, jobs)));
    for (const auto& n : plan.notes) fmt::print(stderr, "stalesim: note: {}\n", n);
    if (plan.skipped > 0)
      fmt::print(stderr, "stalesim: note: the constraints skip {} of {} points\n", plan.skipped,
                 plan.skipped + plan.points.size());
  }

  pin_eigen_cache_sizes();
  catch_signals();
  const auto wall0 = std::chrono::steady_clock::now();
  const bool tty = rank == 0 && !quiet && ::isatty(STDERR_FILENO);

  // Progress of this rank's points (rank 0's share under mpirun).
  size_t total = 0, done = 0, failed = 0, ran = 0;
  for (size_t j = 0; j < plan.runs.size(); ++j)
    if (static_cast<int>(j % static_cast<size_t>(ranks)) == rank) total += plan.runs[j].points.size();
  const auto bar = [&] {
    if (!tty) return;
    constexpr size_t kWidth = 20;
    const size_t filled = total ? done * kWidth / total : kWidth;
    std::string eta = "--";
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (ran > 0 && done < total)
      eta = fmt_duration(wall / static_cast<double>(ran) * static_cast<double>(total - done));
    fmt::print(stderr, "\r\033[K[{}{}] {}/{} points, {} failed, ETA {}{}", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), done, total, failed, eta,
               ranks > 1 ? fmt::format(" (rank 0 of {})", ranks) : "");
    std::fflush(stderr);
  };
  const auto report = [&](const std::string& line) {
    if (tty) fmt::print(stderr, "\r\033[K");
    fmt::print(stderr, "stalesim: {}\n", line);
    bar();
  };
  if (rank == 0) {
    for (const auto& pt : plan.points)
      if (!pt.scenario) {
        total += 1;
        done += 1;
        failed += 1;
        report(fmt::format("point {} ({}): {}", pt.index, describe_point(plan, pt.index), pt.error));
      }
  }
  bar();

  SweepOptions so;
  so.jobs = jobs;
  so.threads = threads_option(p.vm, jobs);
  so.rank = rank;
  so.ranks = ranks;
  so.interrupt = &g_interrupt;
  so.rerun = force;
  const OutputGuard point_guard = output_guard(spec.scenario_path);
  so.home = point_guard.home;
  if (auto hook = point_guard.checkpoint) {
    // One counter for the whole sweep: every point's OutputGuard holds a copy of this function,
    // so the hook's state lives behind a shared pointer.
    auto shared = std::make_shared<std::pair<std::mutex, std::function<void(std::string_view)>>>();
    shared->second = std::move(hook);
    so.checkpoint = [shared](std::string_view step) {
      std::lock_guard guard(shared->first);
      shared->second(step);
    };
  }
  so.on_run_done = [&](const SweepRun& run, const RunRecord& rec) {
    done += run.points.size();
    if (!rec.skipped) ran += run.points.size();
    if (!sweep_status_ok(rec.status)) {
      failed += run.points.size();
      if (rec.status != SweepStatus::kNotRun && rec.status != SweepStatus::kInterrupted) {
        const std::string shared =
            run.points.size() > 1 ? fmt::format(" and {} identical point(s)", run.points.size() - 1) : "";
        report(fmt::format(
            "point {} ({}){}: {}{}", run.points.front(), describe_point(plan, run.points.front()), shared,
            rec.status == SweepStatus::kFailed ? "" : std::string(enum_name(rec.status)) + ": ",
            rec.message));
      }
    }
    bar();
  };
  std::vector<RunRecord> records;
  try {
    records = run_sweep(plan, dir, so);
    gather_records(mpi, records);
  } catch (const std::exception& e) {
    if (mpi && ranks > 1) {
      fmt::print(stderr, "stalesim: rank {}: internal error: {}\n", rank, e.what());
      mpi->abort(kExitFailed);
    }
    throw;
  }
  if (tty) fmt::print(stderr, "\r\033[K");

  int code = kExitOk;
  if (rank == 0) {
    write_file_atomically((std::filesystem::path(dir) / "sweep.csv").string(), sweep_csv(plan, records));
    if (force && !g_interrupt.load()) prune_sweep_dir(dir, plan);  // points of an earlier plan
    const SweepTally t = tally_sweep(plan, records);
    std::string stopped;
    if (t.interrupted + t.not_run > 0)
      stopped = fmt::format(", {} interrupted, {} not run", t.interrupted, t.not_run);
    fmt::print(
        "{}: {} points in {} folders: {} run, {} skipped (done before), {} failed{}; wrote {}/sweep.csv\n",
        plan.base.name, plan.points.size(), plan.runs.size(), t.ran, t.skipped, t.failed, stopped,
        std::filesystem::path(dir).lexically_normal().string());
    if (!quiet)
      fmt::print(stderr, "wall time {:.2f} s ({} job{}{})\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(), jobs,
                 jobs == 1 ? "" : "s", ranks > 1 ? fmt::format(" on each of {} ranks", ranks) : "");
    if (g_interrupt.load()) {
      fmt::print(stderr, "stalesim: interrupted; rerun the same command to resume\n");
      code = kExitInterrupted;
    } else if (!t.ok()) {
      code = kExitFailed;
    }
  }
  if (mpi) code = mpi->broadcast(code);
  return code;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args) {
  const int launched = mpi_launch_size();
  if (launched > 1 && !mpi_built())
    throw UsageError(fmt::format(
        "started by mpirun with {} processes, but this stalesim was built without MPI (configure with "
        "-DSTALESIM_MPI=ON and OpenMPI installed: tools/install-deps.sh --all); run it without mpirun, "
        "with --jobs N",
        launched));
  std::optional<MpiSession> mpi;
  if (launched > 0 && mpi_built()) mpi.emplace();
  try {
    return sweep_body(args, mpi ? &*mpi : nullptr);
  } catch (const std::runtime_error& e) {
    // Bad input is the same on every rank: rank 0 alone says so.
    const bool input = dynamic_cast<const UsageError*>(&e) || dynamic_cast<const ScenarioError*>(&e) ||
                       dynamic_cast<const IoError*>(&e) || dynamic_cast<const DataError*>(&e);
    if (mpi && mpi->rank() != 0 && input) return kExitBadInput;
    throw;
  }
}

}  // namespace stalesim::cli
