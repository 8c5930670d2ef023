// One torch operation over weft: its weft requests, the tensors the C side
// reads or writes, the copy-backs to run on success, and how it completes.
//
// Whoever needs the result first completes it: wait() or isCompleted() in
// the calling thread (no hand-off: the common blocking case), or the
// backend's completion thread for a Work whose future was asked for or
// which was dropped before it ended.  Completing means weft_wait on every
// request, the copy-backs, then the future and the waiters.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include "weft.h"

namespace weft_torch {

// The failure of one operation: weft's status, the operation, the
// communicator's message.  Raised to Python as weft.torch.WeftError.
struct WeftException : public c10::DistBackendError {
  WeftException(int status, std::string what, std::string message);
  int status;
  std::string what;
  std::string detail;
};

std::exception_ptr weftError(int status, const std::string& what,
                             weft_comm_t comm);

// Keeps `keep` alive until weft ends `reqs` (an operation abandoned at its
// own deadline while weft still runs it), then frees the requests.
void releaseLater(std::vector<weft_request_t> reqs,
                  std::vector<at::Tensor> keep);

struct OpState {
  std::string what;
  std::vector<weft_request_t> requests;
  std::vector<at::Tensor> keep;            // buffers in use by weft
  std::vector<std::function<void()>> finalize;  // copy-backs on success
  std::vector<at::Tensor> result;
  std::function<void()> endProfiling;
  // the caller waits at once and nothing asks for a deadline of its own:
  // the backend runs the operation through weft's blocking calls
  bool callerWaits = false;
  // a receive: keeps the rank its message came from (-1: not known)
  bool wantSource = false;
  int source = -1;
  weft_comm_t comm = nullptr;
  // deadline of a per-operation timeout (zero: the communicator's)
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point start;
  // set when an operation of the group is given up at its own deadline:
  // weft still runs it, so shutting the group down must abort, not wait
  std::shared_ptr<std::atomic<bool>> abandoned;

  std::mutex mu;
  std::condition_variable cv;
  bool claimed = false;    // someone is completing it
  bool finished = false;   // results in place (or failed)
  std::exception_ptr error;

  ~OpState();
  // Waits for the requests and runs the copy-backs (once); later callers
  // block until the first one is done.  Past the per-operation timeout the
  // operation fails with a timeout error (its buffers stay alive until
  // weft ends the requests).
  void complete();
  // True when every request has ended (completes it then).
  bool poll();
};

// The thread that completes futures and dropped work, in issue order.
class Completer {
 public:
  Completer();
  ~Completer();
  void push(std::function<void()> job);
  void stop();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

class WeftWork : public c10d::Work {
 public:
  WeftWork(int rank, c10d::OpType type, const char* profilingTitle,
           std::vector<std::shared_ptr<OpState>> ops,
           std::shared_ptr<Completer> completer,
           std::vector<at::Tensor> result,
           const std::optional<std::vector<at::Tensor>>& inputs);
  ~WeftWork() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void abort() override;

  const std::vector<std::shared_ptr<OpState>>& ops() const { return ops_; }

 private:
  void handOver();
  std::vector<std::shared_ptr<OpState>> ops_;
  std::shared_ptr<Completer> completer_;
  std::vector<at::Tensor> result_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex futureMu_;
};

}  // namespace weft_torch
