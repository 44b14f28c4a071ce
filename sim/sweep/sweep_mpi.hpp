#pragma once
// MPI for `stalesim sweep` under mpirun (DESIGN.md section 7): the ranks split a sweep's runs and
// rank 0 gathers their records. Built with MPI when the CMake option STALESIM_MPI is on (AUTO: when
// find_package(MPI) finds it); without it, mpi_built() is false and MpiSession is one rank.
//
// MPI is initialized only by an MpiSession, which `stalesim sweep` creates only when it was
// started by mpirun; every other command never touches MPI.

#include <string>
#include <vector>

namespace stalesim {

// Whether this binary was built with MPI.
bool mpi_built();

// The number of processes of the mpirun that started this one (OpenMPI's OMPI_COMM_WORLD_SIZE,
// else PMI_SIZE or PMIX_SIZE), or 0 when it was not started by mpirun.
int mpi_launch_size();

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

}  // namespace stalesim
