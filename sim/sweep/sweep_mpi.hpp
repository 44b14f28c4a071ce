#pragma once
// MPI for `stalesim sweep` under mpirun (DESIGN.md section 7): the ranks split a sweep's runs and
// rank 0 gathers their records. Built with MPI when the CMake option STALESIM_MPI is on (AUTO: when
// find_package(MPI) finds it); without it, mpi_built() is false and MpiSession is one rank.
//
// MPI is initialized only by an MpiSession, which `stalesim sweep` creates only when it was
// started by mpirun (the CLI reads that from the environment: tools/cli.hpp, mpi_launch_size);
// every other command never touches MPI.
//
// The collective steps of a sweep are here too: rank 0's verdict on preparing it, which every
// rank follows, and the gather of every rank's records to rank 0.

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "sim/sweep/sweep.hpp"

namespace stalesim {

// Whether this binary was built with MPI.
bool mpi_built();

// MPI_Init_thread (MPI_THREAD_FUNNELED: only the constructing thread calls MPI) on construction,
// MPI_Finalize on destruction. One per process. Without MPI: rank 0 of 1, and no calls at all.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's `value`, on every rank (collective).
  int broadcast(int value) const;
  // Rank 0 gets every rank's `text`, in rank order; the others get an empty list (collective).
  std::vector<std::string> gather(const std::string& text) const;
  // Ends every rank of the job with `code` (MPI_Abort); returns only without MPI.
  void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Runs `prepare` on rank 0 (checking memory and making the sweep folder, say) and has every rank
// follow its verdict; `mpi` == nullptr: one process. Returns true on every rank when `prepare`
// returned. When it throws ScenarioError or IoError (bad input: nothing has run or been written):
// alone, the error propagates; under mpirun, rank 0 hands it to `report` and every rank returns
// false only once rank 0 has reported (mpirun ends the job at the first non-zero exit and may
// drop what a slower rank still had to print). Collective.
bool prepare_on_rank0(const MpiSession* mpi, const std::function<void()>& prepare,
                      const std::function<void(const std::exception&)>& report);

// Under mpirun with more than one rank, rank 0 receives every rank's records (run j is rank
// j % ranks's: run_sweep) into `records`; the other ranks keep their own. Nothing otherwise.
// Collective.
void gather_records(const MpiSession* mpi, std::vector<RunRecord>& records);

}  // namespace stalesim
