// The "weft" c10d::Backend: torch.distributed's collectives on CPU tensors
// as weft's non-blocking operations (weft_i*), started in the order torch
// issues them, each returned at once as a WeftWork.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "work.hpp"

namespace weft_torch {

using c10d::Work;
using TensorList = std::vector<at::Tensor>;

class WeftBackend : public c10d::Backend {
 public:
  // Takes ownership of `comm` (created by the Python bootstrap).
  // `registeredAs`: the name torch created the group under ("weft" unless
  // weft was registered under another name), which titles its profiler
  // events; the backend's own name stays "weft".
  WeftBackend(weft_comm_t comm, int rank, int size,
              std::chrono::milliseconds timeout,
              std::string registeredAs = "weft");
  ~WeftBackend() override;

  const std::string getBackendName() const override { return "weft"; }
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<Work> endCoalescing() override;

  c10::intrusive_ptr<Work> broadcast(
      TensorList& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce(
      TensorList& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce_coalesced(
      TensorList& tensors,
      const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<Work> reduce(
      TensorList& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<Work> allgather(
      std::vector<TensorList>& outputs, TensorList& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_coalesced(
      std::vector<TensorList>& outputLists, TensorList& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(
      TensorList& outputs, TensorList& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> gather(
      std::vector<TensorList>& outputs, TensorList& inputs,
      const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<Work> scatter(
      TensorList& outputs, std::vector<TensorList>& inputs,
      const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter(
      TensorList& outputs, std::vector<TensorList>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(
      TensorList& outputs, TensorList& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall_base(
      at::Tensor& output, at::Tensor& input,
      std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall(
      TensorList& outputs, TensorList& inputs,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> barrier(
      const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts,
                        bool waitAllRanks) override;
  c10::intrusive_ptr<Work> send(TensorList& tensors, int dstRank,
                                int tag) override;
  c10::intrusive_ptr<Work> recv(TensorList& tensors, int srcRank,
                                int tag) override;
  c10::intrusive_ptr<Work> recvAnysource(TensorList& tensors,
                                         int tag) override;

  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

  // destroy_process_group: finish pending work, release the communicator.
  void shutdown() override;
  // Fail pending operations at once (ERR_ABORTED) and release.
  void abort() override;

  weft_comm_t comm() const { return comm_; }

 private:
  // asyncOp false: torch waits on the Work right away (dist.all_reduce
  // without async_op), so the operation may run in the calling thread
  // (OpState::callerWaits, run()).
  std::shared_ptr<OpState> newOp(const char* what,
                                 std::chrono::milliseconds timeout,
                                 bool asyncOp = true);
  // Starts one weft operation as part of `op`; on failure, what already
  // started is finished by the completion thread and the error is raised.
  template <typename F>
  void start(const std::shared_ptr<OpState>& op, F&& fn);
  // Runs one weft operation of `op` to its end through weft's blocking
  // call, which drives it in this thread without waking weft's progress
  // thread: a non-blocking start wakes that thread every call, which
  // costs more than a small operation itself.  Raises its error.
  template <typename F>
  void run(const std::shared_ptr<OpState>& op, F&& fn);
  // Raises weft's error `status` for `op`; the operations of `op` that
  // started are finished by the completion thread first.
  [[noreturn]] void fail(const std::shared_ptr<OpState>& op, int status);
  c10::intrusive_ptr<Work> finish(
      c10d::OpType type, const char* title,
      const std::shared_ptr<OpState>& op, TensorList result,
      const std::optional<TensorList>& inputs = std::nullopt);
  // The profiler's title of an operation: "weft:<op>" becomes
  // "<registeredAs>:<op>", what torch's tools and tests look for
  // (dist.get_backend(group) + ":<op>"; gloo's are "gloo:<op>").
  const char* title(const char* weftTitle) const;
  void checkRoot(int64_t root, const char* what) const;
  void reduceInto(const std::shared_ptr<OpState>& op, const at::Tensor& t,
                  const c10d::ReduceOp& red);
  void allreduceSparse(at::Tensor& t, const c10d::ReduceOp& red);
  at::Tensor packedAllgather(const std::shared_ptr<OpState>& op,
                             const TensorList& inputs, size_t total);
  void reduceScatterFlat(const std::shared_ptr<OpState>& op,
                         const at::Tensor& out, const at::Tensor& flatIn,
                         const c10d::ReduceOp& red, const char* what);

  weft_comm_t comm_;
  std::string registeredAs_;
  bool renamed_;  // registeredAs_ is not "weft"
  std::shared_ptr<Completer> completer_;
  std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> seq_{0};
  std::shared_ptr<std::atomic<bool>> abandoned_ =
      std::make_shared<std::atomic<bool>>(false);
  bool coalescing_ = false;
  std::vector<std::shared_ptr<OpState>> coalesced_;
  TensorList coalescedResult_;
};

}  // namespace weft_torch
