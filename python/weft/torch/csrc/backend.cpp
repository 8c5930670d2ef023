// The "weft" c10d::Backend (see backend.hpp): checks and stages buffers,
// starts weft's non-blocking operations, returns WeftWork at once.
#include "backend.hpp"

#include <cstring>
#include <mutex>
#include <set>
#include <sstream>

#include "reduce.hpp"

namespace weft_torch {

using c10d::OpType;

namespace {

size_t nbytes(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

void checkCpu(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu())
    throw WeftException(WEFT_ERR_UNSUPPORTED, what,
                        "the weft backend takes CPU tensors; got one on " +
                            t.device().str());
}

void checkCpu(const TensorList& ts, const char* what) {
  for (auto& t : ts)
    checkCpu(t, what);
}

[[noreturn]] void invalid(const char* what, const std::string& why) {
  throw WeftException(WEFT_ERR_INVALID_ARG, what, why);
}

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << c10::toString(t.scalar_type()) << "[" << t.numel() << "]";
  return s.str();
}

// Byte copies between tensors (any layout) and packed buffers.
void toBytes(uint8_t* dst, const at::Tensor& src) {
  if (src.numel() == 0)
    return;
  auto c = src.contiguous();
  std::memcpy(dst, c.data_ptr(), nbytes(c));
}

void fromBytes(const at::Tensor& dst, const uint8_t* src) {
  if (dst.numel() == 0)
    return;
  if (dst.is_contiguous()) {
    std::memcpy(dst.data_ptr(), src, nbytes(dst));
    return;
  }
  auto tmp = at::empty(dst.sizes(), dst.options());
  std::memcpy(tmp.data_ptr(), src, nbytes(tmp));
  dst.copy_(tmp);
}

uint8_t* bytes(const at::Tensor& t) {
  return static_cast<uint8_t*>(t.data_ptr());
}

at::Tensor byteBuffer(size_t n) {
  return at::empty({static_cast<int64_t>(n)}, at::kByte);
}

void copyBack(const std::shared_ptr<OpState>& op, const at::Tensor& dst,
              const at::Tensor& src) {
  if (!dst.is_same(src))
    op->finalize.push_back([dst, src]() mutable { dst.copy_(src); });
}

bool sameShapes(const TensorList& ts, const at::Tensor& like) {
  for (auto& t : ts)
    if (t.numel() != like.numel() || t.scalar_type() != like.scalar_type())
      return false;
  return true;
}

// Profiling titles live as long as the process: torch's RecordFunction
// keeps a view of the title until the operation ends, which may be after
// its group is gone.
const char* intern(const std::string& s) {
  static std::mutex mu;
  static std::set<std::string> pool;
  std::lock_guard<std::mutex> g(mu);
  return pool.insert(s).first->c_str();
}

// A list of blocks, one per rank, and this rank's tensor `t`: every block
// of t's dtype, and block `own` (t's counterpart) of t's size.
void checkBlocks(const char* what, const TensorList& list,
                 const char* listName, const at::Tensor& t,
                 const char* tName, int own) {
  for (auto& x : list)
    if (x.scalar_type() != t.scalar_type())
      invalid(what, std::string(listName) + " " + describe(x) + " and " +
                        tName + " " + describe(t) + " differ in dtype");
  if (nbytes(list[own]) != nbytes(t))
    invalid(what, std::string(listName) + " " + std::to_string(own) +
                      " is " + describe(list[own]) + " where this rank's " +
                      tName + " is " + describe(t));
}

// The counts and displacements of a vector collective (weft_i*v): one
// block per rank, one after another in rank order.
struct Blocks {
  std::vector<size_t> counts, displs;
  size_t total = 0;
  void add(size_t n) {
    counts.push_back(n);
    displs.push_back(total);
    total += n;
  }
};

// A block of nbytes(t) per tensor of `ts`.
Blocks byteBlocks(const TensorList& ts) {
  Blocks b;
  for (auto& t : ts)
    b.add(nbytes(t));
  return b;
}

// `ts` packed into one buffer as laid out by `b`.
at::Tensor pack(const TensorList& ts, const Blocks& b) {
  auto buf = byteBuffer(b.total);
  for (size_t r = 0; r < ts.size(); r++)
    toBytes(bytes(buf) + b.displs[r], ts[r]);
  return buf;
}

// Once `op` has succeeded, `flat`'s blocks (laid out by `b`) go into `outs`.
void unpackLater(const std::shared_ptr<OpState>& op, const at::Tensor& flat,
                 const TensorList& outs, const Blocks& b) {
  auto displs = b.displs;
  op->finalize.push_back([flat, outs, displs] {
    for (size_t r = 0; r < outs.size(); r++)
      fromBytes(outs[r], bytes(flat) + displs[r]);
  });
}

TensorList flatten(const std::vector<TensorList>& lists) {
  TensorList out;
  for (auto& l : lists)
    out.insert(out.end(), l.begin(), l.end());
  return out;
}

}  // namespace

WeftBackend::WeftBackend(weft_comm_t comm, int rank, int size,
                         std::chrono::milliseconds timeout,
                         std::string registeredAs)
    : Backend(rank, size), comm_(comm),
      registeredAs_(std::move(registeredAs)),
      renamed_(registeredAs_ != "weft"),
      completer_(std::make_shared<Completer>()), timeout_(timeout) {}

const char* WeftBackend::title(const char* weftTitle) const {
  if (!renamed_)
    return weftTitle;
  return intern(registeredAs_ + (weftTitle + std::strlen("weft")));
}

WeftBackend::~WeftBackend() { shutdown(); }

void WeftBackend::shutdown() {
  if (*abandoned_) {  // an operation given up at its deadline still runs
    abort();
    return;
  }
  if (completer_)
    completer_->stop();
  if (comm_ != nullptr) {
    weft_comm_destroy(comm_);
    comm_ = nullptr;
  }
}

void WeftBackend::abort() {
  if (comm_ != nullptr) {
    weft_comm_abort(comm_);
    comm_ = nullptr;
  }
  if (completer_)
    completer_->stop();
}

std::shared_ptr<OpState> WeftBackend::newOp(
    const char* what, std::chrono::milliseconds timeout, bool asyncOp) {
  if (comm_ == nullptr)
    throw WeftException(WEFT_ERR_INVALID_USAGE, what,
                        "the process group was shut down or aborted");
  auto op = std::make_shared<OpState>();
  op->what = what;
  op->comm = comm_;
  op->abandoned = abandoned_;
  if (timeout.count() > 0 && timeout < timeout_) {
    op->timeout = timeout;
    op->start = std::chrono::steady_clock::now();
  }
  op->callerWaits = !asyncOp && !coalescing_ && op->timeout.count() == 0;
  seq_++;
  return op;
}

void WeftBackend::fail(const std::shared_ptr<OpState>& op, int status) {
  auto err = weftError(status, op->what, comm_);
  if (!op->requests.empty()) {  // let what started end, then release
    op->finalize.clear();
    auto keep = op;
    completer_->push([keep] { keep->complete(); });
  }
  std::rethrow_exception(err);
}

template <typename F>
void WeftBackend::start(const std::shared_ptr<OpState>& op, F&& fn) {
  weft_request_t req = nullptr;
  int st = fn(&req);
  if (st != WEFT_OK)
    fail(op, st);
  op->requests.push_back(req);
}

template <typename F>
void WeftBackend::run(const std::shared_ptr<OpState>& op, F&& fn) {
  int st = fn();
  if (st != WEFT_OK)
    fail(op, st);
}

c10::intrusive_ptr<Work> WeftBackend::finish(
    OpType type, const char* title, const std::shared_ptr<OpState>& op,
    TensorList result, const std::optional<TensorList>& inputs) {
  op->result = result;
  if (coalescing_) {
    coalesced_.push_back(op);
    coalescedResult_.insert(coalescedResult_.end(), result.begin(),
                            result.end());
  }
  return c10::make_intrusive<WeftWork>(
      rank_, type, this->title(title),
      std::vector<std::shared_ptr<OpState>>{op},
      completer_, std::move(result), inputs);
}

void WeftBackend::checkRoot(int64_t root, const char* what) const {
  if (root < 0 || root >= size_)
    invalid(what, "root " + std::to_string(root) + " is outside [0, " +
                      std::to_string(size_) + ")");
}

// ---- coalescing: the operations between start and end become one Work --

void WeftBackend::startCoalescing() {
  coalescing_ = true;
  coalesced_.clear();
  coalescedResult_.clear();
}

c10::intrusive_ptr<Work> WeftBackend::endCoalescing() {
  coalescing_ = false;
  auto ops = std::move(coalesced_);
  auto result = std::move(coalescedResult_);
  coalesced_.clear();
  coalescedResult_.clear();
  return c10::make_intrusive<WeftWork>(rank_, OpType::COALESCED,
                                       title("weft:coalesced"), std::move(ops),
                                       completer_, std::move(result),
                                       std::nullopt);
}

// ---- reductions ---------------------------------------------------------

void WeftBackend::reduceInto(const std::shared_ptr<OpState>& op,
                             const at::Tensor& t,
                             const c10d::ReduceOp& red) {
  auto r = reducible(t, red, op->what.c_str());
  op->keep.push_back(r.buf);
  copyBack(op, t, r.buf);
  if (op->callerWaits)
    run(op, [&] {
      return weft_allreduce(r.buf.data_ptr(), r.buf.data_ptr(), r.count,
                            r.dtype, r.op, comm_);
    });
  else
    start(op, [&](weft_request_t* q) {
      return weft_iallreduce(r.buf.data_ptr(), r.buf.data_ptr(), r.count,
                             r.dtype, r.op, comm_, q);
    });
}

c10::intrusive_ptr<Work> WeftBackend::allreduce(
    TensorList& tensors, const c10d::AllreduceOptions& opts) {
  checkCpu(tensors, "allreduce");
  auto op = newOp("allreduce", opts.timeout, opts.asyncOp);
  for (auto& t : tensors) {
    if (t.is_sparse())
      allreduceSparse(t, opts.reduceOp);
    else
      reduceInto(op, t, opts.reduceOp);
  }
  return finish(OpType::ALLREDUCE, "weft:all_reduce", op, tensors, tensors);
}

c10::intrusive_ptr<Work> WeftBackend::allreduce_coalesced(
    TensorList& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  checkCpu(tensors, "allreduce_coalesced");
  auto op = newOp("allreduce_coalesced", opts.timeout);
  bool fuse = tensors.size() > 1;
  for (auto& t : tensors)
    fuse = fuse && !t.is_sparse() &&
           t.scalar_type() == tensors[0].scalar_type();
  if (!fuse) {
    for (auto& t : tensors)
      reduceInto(op, t, opts.reduceOp);
  } else {
    // One weft operation for the whole list.
    TensorList flat;
    for (auto& t : tensors)
      flat.push_back(t.reshape({-1}));
    auto r = reducible(at::cat(flat), opts.reduceOp, "allreduce_coalesced");
    op->keep.push_back(r.buf);
    start(op, [&](weft_request_t* q) {
      return weft_iallreduce(r.buf.data_ptr(), r.buf.data_ptr(), r.count,
                             r.dtype, r.op, comm_, q);
    });
    auto buf = r.buf;
    auto outs = tensors;
    op->finalize.push_back([buf, outs]() mutable {
      int64_t off = 0;
      for (auto& t : outs) {
        t.copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
        off += t.numel();
      }
    });
  }
  return finish(OpType::ALLREDUCE_COALESCED, "weft:all_reduce_coalesced", op,
                tensors, tensors);
}

c10::intrusive_ptr<Work> WeftBackend::reduce(
    TensorList& tensors, const c10d::ReduceOptions& opts) {
  checkCpu(tensors, "reduce");
  checkRoot(opts.rootRank, "reduce");
  int root = static_cast<int>(opts.rootRank);
  auto op = newOp("reduce", opts.timeout);
  for (auto& t : tensors) {
    auto r = reducible(t, opts.reduceOp, "reduce");
    op->keep.push_back(r.buf);
    void* recv = rank_ == root ? r.buf.data_ptr() : nullptr;
    if (rank_ == root)
      copyBack(op, t, r.buf);
    start(op, [&](weft_request_t* q) {
      return weft_ireduce(r.buf.data_ptr(), recv, r.count, r.dtype, r.op,
                          root, comm_, q);
    });
  }
  return finish(OpType::REDUCE, "weft:reduce", op, tensors, tensors);
}

// Sparse tensors: gloo's way, through allgathers (the nnz of every rank,
// then indices and values padded to the largest), summed locally.
void WeftBackend::allreduceSparse(at::Tensor& t, const c10d::ReduceOp& red) {
  if (red.op_ != c10d::ReduceOp::SUM)
    throw WeftException(WEFT_ERR_UNSUPPORTED, "allreduce",
                        "sparse tensors take SUM only (as in gloo)");
  auto input = t.coalesce();
  auto idx = input.indices().contiguous();
  auto val = input.values().contiguous();
  auto blocking = [&](auto fn) {
    auto op = newOp("allreduce (sparse)", std::chrono::milliseconds(0));
    start(op, fn);
    op->complete();
    if (op->error)
      std::rethrow_exception(op->error);
  };
  auto nnz = at::tensor({input._nnz()}, at::kLong);
  auto all = at::empty({size_}, at::kLong);
  blocking([&](weft_request_t* r) {
    return weft_iallgather(nnz.data_ptr(), all.data_ptr(), 1, WEFT_INT64,
                           comm_, r);
  });
  int64_t maxNnz = all.max().item<int64_t>();
  auto idxShape = idx.sizes().vec();
  auto valShape = val.sizes().vec();
  idxShape[1] = maxNnz;
  valShape[0] = maxNnz;
  auto idxPad = at::zeros(idxShape, idx.options());
  auto valPad = at::zeros(valShape, val.options());
  idxPad.narrow(1, 0, idx.size(1)).copy_(idx);
  valPad.narrow(0, 0, val.size(0)).copy_(val);
  idxShape.insert(idxShape.begin(), size_);
  valShape.insert(valShape.begin(), size_);
  auto idxAll = at::empty(idxShape, idx.options());
  auto valAll = at::empty(valShape, val.options());
  blocking([&](weft_request_t* r) {
    return weft_iallgather(idxPad.data_ptr(), idxAll.data_ptr(),
                           nbytes(idxPad), WEFT_UINT8, comm_, r);
  });
  blocking([&](weft_request_t* r) {
    return weft_iallgather(valPad.data_ptr(), valAll.data_ptr(),
                           nbytes(valPad), WEFT_UINT8, comm_, r);
  });
  at::Tensor sum;
  for (int64_t r = 0; r < size_; r++) {
    int64_t n = all[r].item<int64_t>();
    auto part = at::sparse_coo_tensor(idxAll[r].narrow(1, 0, n),
                                      valAll[r].narrow(0, 0, n),
                                      input.sizes(), input.options());
    sum = sum.defined() ? sum + part : part;
  }
  t.copy_(sum.coalesce());
}

// ---- data movement ------------------------------------------------------

c10::intrusive_ptr<Work> WeftBackend::broadcast(
    TensorList& tensors, const c10d::BroadcastOptions& opts) {
  checkCpu(tensors, "broadcast");
  checkRoot(opts.rootRank, "broadcast");
  int root = static_cast<int>(opts.rootRank);
  auto op = newOp("broadcast", opts.timeout, opts.asyncOp);
  for (auto& t : tensors) {
    auto buf = t.contiguous();
    op->keep.push_back(buf);
    copyBack(op, t, buf);
    if (op->callerWaits)
      run(op, [&] {
        return weft_broadcast(buf.data_ptr(), buf.data_ptr(), nbytes(buf),
                              WEFT_UINT8, root, comm_);
      });
    else
      start(op, [&](weft_request_t* r) {
        return weft_ibroadcast(buf.data_ptr(), buf.data_ptr(), nbytes(buf),
                               WEFT_UINT8, root, comm_, r);
      });
  }
  return finish(OpType::BROADCAST, "weft:broadcast", op, tensors, tensors);
}

c10::intrusive_ptr<Work> WeftBackend::allgather(
    std::vector<TensorList>& outputs, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  checkCpu(inputs, "allgather");
  if (outputs.size() != inputs.size())
    invalid("allgather", "one output list per input expected");
  auto op = newOp("allgather", opts.timeout);
  for (size_t i = 0; i < inputs.size(); i++) {
    auto& inp = inputs[i];
    auto outs = outputs[i];
    checkCpu(outs, "allgather");
    if (static_cast<int>(outs.size()) != size_)
      invalid("allgather", "the output list has " +
                               std::to_string(outs.size()) +
                               " tensors, expected one per rank (" +
                               std::to_string(size_) + ")");
    checkBlocks("allgather", outs, "output", inp, "input", rank_);
    // Every rank sees the same output sizes, so every rank takes the same
    // branch: equal sizes keep weft_iallgather (its algorithms and cached
    // plans), uneven ones (torch allows them in the list form) go to
    // weft_iallgatherv, which moves each block at its own length.
    auto b = byteBlocks(outs);
    auto src = inp.contiguous();
    auto flat = byteBuffer(b.total);
    op->keep.insert(op->keep.end(), {src, flat});
    if (sameShapes(outs, outs[0]))
      start(op, [&](weft_request_t* r) {
        return weft_iallgather(src.data_ptr(), flat.data_ptr(), nbytes(src),
                               WEFT_UINT8, comm_, r);
      });
    else
      start(op, [&](weft_request_t* r) {
        return weft_iallgatherv(src.data_ptr(), nbytes(src), flat.data_ptr(),
                                b.counts.data(), b.displs.data(), WEFT_UINT8,
                                comm_, r);
      });
    unpackLater(op, flat, outs, b);
  }
  return finish(OpType::ALLGATHER, "weft:all_gather", op, flatten(outputs),
                inputs);
}

c10::intrusive_ptr<Work> WeftBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::AllgatherOptions& opts) {
  checkCpu(output, "allgather");
  checkCpu(input, "allgather");
  if (output.numel() != size_ * input.numel() ||
      output.scalar_type() != input.scalar_type())
    invalid("allgather", "output has " + describe(output) + ", expected " +
                             c10::toString(input.scalar_type()) + "[" +
                             std::to_string(size_ * input.numel()) + "]");
  auto op = newOp("allgather", opts.timeout, opts.asyncOp);
  auto src = input.contiguous();
  auto dst = output.contiguous();
  op->keep.insert(op->keep.end(), {src, dst});
  copyBack(op, output, dst);
  if (op->callerWaits)
    run(op, [&] {
      return weft_allgather(src.data_ptr(), dst.data_ptr(), nbytes(src),
                            WEFT_UINT8, comm_);
    });
  else
    start(op, [&](weft_request_t* r) {
      return weft_iallgather(src.data_ptr(), dst.data_ptr(), nbytes(src),
                             WEFT_UINT8, comm_, r);
    });
  return finish(OpType::_ALLGATHER_BASE, "weft:_allgather_base", op,
                {output}, TensorList{input});
}

// Every input packed into one buffer of `total` bytes and allgathered in
// one weft operation: rank r's pack is at r * total in the result.
at::Tensor WeftBackend::packedAllgather(const std::shared_ptr<OpState>& op,
                                        const TensorList& inputs,
                                        size_t total) {
  auto pack = byteBuffer(total);
  size_t off = 0;
  for (auto& t : inputs) {
    toBytes(bytes(pack) + off, t);
    off += nbytes(t);
  }
  auto flat = byteBuffer(total * size_);
  op->keep.insert(op->keep.end(), {pack, flat});
  start(op, [&](weft_request_t* r) {
    return weft_iallgather(pack.data_ptr(), flat.data_ptr(), total,
                           WEFT_UINT8, comm_, r);
  });
  return flat;
}

c10::intrusive_ptr<Work> WeftBackend::allgather_coalesced(
    std::vector<TensorList>& outputLists, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  // torch's layout: outputLists[rank][i] receives rank's inputs[i].
  checkCpu(inputs, "allgather_coalesced");
  if (static_cast<int>(outputLists.size()) != size_)
    invalid("allgather_coalesced",
            "output_tensor_lists has " + std::to_string(outputLists.size()) +
                " lists, expected one per rank (" + std::to_string(size_) +
                "), each with one tensor per input");
  size_t total = 0;
  for (auto& t : inputs)
    total += nbytes(t);
  for (size_t r = 0; r < outputLists.size(); r++) {
    auto& outs = outputLists[r];
    checkCpu(outs, "allgather_coalesced");
    if (outs.size() != inputs.size())
      invalid("allgather_coalesced",
              "output list " + std::to_string(r) + " has " +
                  std::to_string(outs.size()) + " tensors, expected " +
                  std::to_string(inputs.size()) + " (one per input)");
    for (size_t i = 0; i < outs.size(); i++)
      if (outs[i].numel() != inputs[i].numel() ||
          outs[i].scalar_type() != inputs[i].scalar_type())
        invalid("allgather_coalesced",
                "output [" + std::to_string(r) + "][" + std::to_string(i) +
                    "] is " + describe(outs[i]) + ", input " +
                    std::to_string(i) + " is " + describe(inputs[i]));
  }
  auto op = newOp("allgather_coalesced", opts.timeout);
  auto flat = packedAllgather(op, inputs, total);
  auto lists = outputLists;
  op->finalize.push_back([flat, lists, total] {
    for (size_t r = 0; r < lists.size(); r++) {
      size_t at = r * total;
      for (auto& o : lists[r]) {
        fromBytes(o, bytes(flat) + at);
        at += nbytes(o);
      }
    }
  });
  return finish(OpType::ALLGATHER_COALESCED, "weft:all_gather_coalesced", op,
                flatten(outputLists), inputs);
}

c10::intrusive_ptr<Work> WeftBackend::allgather_into_tensor_coalesced(
    TensorList& outputs, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  checkCpu(inputs, "allgather_into_tensor_coalesced");
  checkCpu(outputs, "allgather_into_tensor_coalesced");
  if (outputs.size() != inputs.size())
    invalid("allgather_into_tensor_coalesced", "one output per input");
  size_t total = 0;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (outputs[i].numel() != size_ * inputs[i].numel() ||
        outputs[i].scalar_type() != inputs[i].scalar_type())
      invalid("allgather_into_tensor_coalesced",
              "output " + std::to_string(i) + " is " + describe(outputs[i]) +
                  ", expected " + std::to_string(size_) + " x input " +
                  describe(inputs[i]));
    total += nbytes(inputs[i]);
  }
  auto op = newOp("allgather_into_tensor_coalesced", opts.timeout);
  auto flat = packedAllgather(op, inputs, total);
  auto outs = outputs;
  int size = size_;
  op->finalize.push_back([flat, outs, total, size] {
    size_t in = 0;  // offset of input i within a rank's block
    for (auto& o : outs) {
      auto dst = o.contiguous();
      size_t n = nbytes(o) / size;
      for (int r = 0; r < size; r++)
        if (n > 0)
          std::memcpy(bytes(dst) + r * n, bytes(flat) + r * total + in, n);
      if (!dst.is_same(o))
        o.copy_(dst);
      in += n;
    }
  });
  return finish(OpType::ALLGATHER_INTO_TENSOR_COALESCED,
                "weft:allgather_into_tensor_coalesced", op, outputs, inputs);
}

c10::intrusive_ptr<Work> WeftBackend::gather(
    std::vector<TensorList>& outputs, TensorList& inputs,
    const c10d::GatherOptions& opts) {
  checkRoot(opts.rootRank, "gather");
  if (inputs.size() != 1)
    invalid("gather", "takes exactly one input tensor");
  auto& inp = inputs[0];
  checkCpu(inp, "gather");
  int root = static_cast<int>(opts.rootRank);
  auto op = newOp("gather", opts.timeout);
  auto src = inp.contiguous();
  op->keep.push_back(src);
  // weft_igatherv, also for equal sizes: a rank other than the root knows
  // only its own size, so it cannot tell an uneven gather from an even
  // one, and every rank must call the same collective.  The root checks
  // each block's length against its output tensor.
  if (rank_ != root) {
    start(op, [&](weft_request_t* r) {
      return weft_igatherv(src.data_ptr(), nbytes(src), nullptr, nullptr,
                           nullptr, WEFT_UINT8, root, comm_, r);
    });
    return finish(OpType::GATHER, "weft:gather", op, {}, inputs);
  }
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_)
    invalid("gather", "the root needs one output list of " +
                          std::to_string(size_) + " tensors");
  auto outs = outputs[0];
  checkCpu(outs, "gather");
  checkBlocks("gather", outs, "output", inp, "input", root);
  auto b = byteBlocks(outs);
  auto flat = byteBuffer(b.total);
  op->keep.push_back(flat);
  start(op, [&](weft_request_t* r) {
    return weft_igatherv(src.data_ptr(), nbytes(src), flat.data_ptr(),
                         b.counts.data(), b.displs.data(), WEFT_UINT8, root,
                         comm_, r);
  });
  unpackLater(op, flat, outs, b);
  return finish(OpType::GATHER, "weft:gather", op, outs, inputs);
}

c10::intrusive_ptr<Work> WeftBackend::scatter(
    TensorList& outputs, std::vector<TensorList>& inputs,
    const c10d::ScatterOptions& opts) {
  checkRoot(opts.rootRank, "scatter");
  if (outputs.size() != 1)
    invalid("scatter", "takes exactly one output tensor");
  auto& out = outputs[0];
  checkCpu(out, "scatter");
  int root = static_cast<int>(opts.rootRank);
  auto op = newOp("scatter", opts.timeout);
  at::Tensor send;
  Blocks b;
  if (rank_ == root) {
    if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != size_)
      invalid("scatter", "the root needs one input list of " +
                             std::to_string(size_) + " tensors");
    checkCpu(inputs[0], "scatter");
    checkBlocks("scatter", inputs[0], "input", out, "output", root);
    b = byteBlocks(inputs[0]);
    send = pack(inputs[0], b);
    op->keep.push_back(send);
  }
  auto dst = out.contiguous();
  op->keep.push_back(dst);
  copyBack(op, out, dst);
  // weft_iscatterv, also for equal sizes, for gather's reason: only the
  // root knows every size; each rank checks its block's length.
  start(op, [&](weft_request_t* r) {
    return weft_iscatterv(send.defined() ? send.data_ptr() : nullptr,
                          send.defined() ? b.counts.data() : nullptr,
                          send.defined() ? b.displs.data() : nullptr,
                          dst.data_ptr(), nbytes(dst), WEFT_UINT8, root,
                          comm_, r);
  });
  return finish(OpType::SCATTER, "weft:scatter", op, outputs,
                rank_ == root ? std::optional<TensorList>(inputs[0])
                              : std::nullopt);
}

void WeftBackend::reduceScatterFlat(const std::shared_ptr<OpState>& op,
                                    const at::Tensor& out,
                                    const at::Tensor& flatIn,
                                    const c10d::ReduceOp& red,
                                    const char* what) {
  if (flatIn.numel() != size_ * out.numel() ||
      flatIn.scalar_type() != out.scalar_type())
    invalid(what, "input has " + describe(flatIn) + ", expected " +
                      c10::toString(out.scalar_type()) + "[" +
                      std::to_string(size_ * out.numel()) + "]");
  int64_t n = out.numel();
  auto src = reducible(flatIn, red, what);
  size_t count = src.count / size_;
  auto dst = out.is_contiguous() && out.scalar_type() ==
                 src.buf.scalar_type() ? out
                 : at::empty({n}, src.buf.options());
  op->keep.insert(op->keep.end(), {src.buf, dst});
  if (!dst.is_same(out))
    op->finalize.push_back(
        [dst, out]() mutable { out.copy_(dst.view(out.sizes())); });
  start(op, [&](weft_request_t* r) {
    return weft_ireduce_scatter(src.buf.data_ptr(), dst.data_ptr(), count,
                                src.dtype, src.op, comm_, r);
  });
}

c10::intrusive_ptr<Work> WeftBackend::reduce_scatter(
    TensorList& outputs, std::vector<TensorList>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  checkCpu(outputs, "reduce_scatter");
  if (outputs.size() != inputs.size())
    invalid("reduce_scatter", "one input list per output expected");
  auto op = newOp("reduce_scatter", opts.timeout);
  for (size_t i = 0; i < outputs.size(); i++) {
    auto& out = outputs[i];
    auto& ins = inputs[i];
    checkCpu(ins, "reduce_scatter");
    if (static_cast<int>(ins.size()) != size_)
      invalid("reduce_scatter", "the input list has " +
                                    std::to_string(ins.size()) +
                                    " tensors, expected one per rank");
    TensorList flat;
    for (auto& t : ins)
      flat.push_back(t.reshape({-1}));
    auto cat = at::cat(flat);
    if (sameShapes(ins, out)) {
      reduceScatterFlat(op, out, cat, opts.reduceOp, "reduce_scatter");
      continue;
    }
    // Uneven blocks (every rank passes the same list, so every rank takes
    // this branch): weft_ireduce_scatterv, a block of its own length each.
    if (ins[rank_].numel() != out.numel() ||
        cat.scalar_type() != out.scalar_type())
      invalid("reduce_scatter", "this rank's block " + describe(ins[rank_]) +
                                    " does not match the output " +
                                    describe(out));
    auto src = reducible(cat, opts.reduceOp, "reduce_scatter");
    // weft counts what it reduces: a complex element is two reals
    size_t per = cat.numel() > 0 ? src.count / cat.numel() : 1;
    Blocks b;
    for (auto& t : ins)
      b.add(static_cast<size_t>(t.numel()) * per);
    auto dst = at::empty({out.numel()}, src.buf.options());
    op->keep.insert(op->keep.end(), {src.buf, dst});
    op->finalize.push_back(
        [dst, out]() mutable { out.copy_(dst.view(out.sizes())); });
    start(op, [&](weft_request_t* r) {
      return weft_ireduce_scatterv(src.buf.data_ptr(), dst.data_ptr(),
                                   b.counts.data(), src.dtype, src.op, comm_,
                                   r);
    });
  }
  return finish(OpType::REDUCE_SCATTER, "weft:reduce_scatter", op, outputs,
                flatten(inputs));
}

c10::intrusive_ptr<Work> WeftBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter");
  checkCpu(input, "reduce_scatter");
  auto op = newOp("reduce_scatter", opts.timeout);
  reduceScatterFlat(op, output, input.reshape({-1}), opts.reduceOp,
                    "reduce_scatter");
  return finish(OpType::_REDUCE_SCATTER_BASE, "weft:_reduce_scatter_base",
                op, {output}, TensorList{input});
}

c10::intrusive_ptr<Work> WeftBackend::reduce_scatter_tensor_coalesced(
    TensorList& outputs, TensorList& inputs,
    const c10d::ReduceScatterOptions& opts) {
  checkCpu(outputs, "reduce_scatter_tensor_coalesced");
  checkCpu(inputs, "reduce_scatter_tensor_coalesced");
  if (outputs.size() != inputs.size())
    invalid("reduce_scatter_tensor_coalesced", "one output per input");
  auto op = newOp("reduce_scatter_tensor_coalesced", opts.timeout);
  bool fuse = !outputs.empty();
  for (size_t i = 0; i < outputs.size(); i++) {
    if (inputs[i].numel() != size_ * outputs[i].numel())
      invalid("reduce_scatter_tensor_coalesced",
              "input " + std::to_string(i) + " is " + describe(inputs[i]) +
                  ", expected " + std::to_string(size_) + " x output " +
                  describe(outputs[i]));
    fuse = fuse && inputs[i].scalar_type() == inputs[0].scalar_type() &&
           outputs[i].scalar_type() == inputs[i].scalar_type();
  }
  if (!fuse) {
    for (size_t i = 0; i < outputs.size(); i++)
      reduceScatterFlat(op, outputs[i], inputs[i].reshape({-1}),
                        opts.reduceOp, "reduce_scatter_tensor_coalesced");
  } else {
    // One weft operation: rank r's block is every input's r-th block.
    TensorList parts;
    int64_t total = 0;
    for (auto& o : outputs)
      total += o.numel();
    for (int r = 0; r < size_; r++)
      for (size_t i = 0; i < inputs.size(); i++) {
        int64_t n = outputs[i].numel();
        parts.push_back(inputs[i].reshape({-1}).narrow(0, r * n, n));
      }
    auto staging = at::empty({total}, outputs[0].options());
    reduceScatterFlat(op, staging, at::cat(parts), opts.reduceOp,
                      "reduce_scatter_tensor_coalesced");
    auto outs = outputs;
    op->finalize.push_back([staging, outs]() mutable {
      int64_t off = 0;
      for (auto& o : outs) {
        o.copy_(staging.narrow(0, off, o.numel()).view(o.sizes()));
        off += o.numel();
      }
    });
  }
  return finish(OpType::REDUCE_SCATTER_TENSOR_COALESCED,
                "weft:reduce_scatter_tensor_coalesced", op, outputs, inputs);
}

// ---- all-to-all ---------------------------------------------------------

c10::intrusive_ptr<Work> WeftBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions& opts) {
  checkCpu(output, "alltoall");
  checkCpu(input, "alltoall");
  auto op = newOp("alltoall", opts.timeout);
  if (outputSplits.empty() && inputSplits.empty()) {
    if (input.numel() % size_ != 0 || output.numel() != input.numel() ||
        output.scalar_type() != input.scalar_type())
      invalid("alltoall", "input " + describe(input) + " and output " +
                              describe(output) + " must match, with a size "
                              "that is a multiple of " +
                              std::to_string(size_));
    auto src = input.contiguous();
    auto dst = output.contiguous();
    op->keep.insert(op->keep.end(), {src, dst});
    copyBack(op, output, dst);
    start(op, [&](weft_request_t* r) {
      return weft_ialltoall(src.data_ptr(), dst.data_ptr(),
                            nbytes(src) / size_, WEFT_UINT8, comm_, r);
    });
  } else {
    // Split sizes are rows of dim 0; weft_ialltoallv takes bytes.  A side
    // without them is split evenly, as torch does.
    if (output.scalar_type() != input.scalar_type() || input.dim() == 0 ||
        output.dim() == 0)
      invalid("alltoall", "input " + describe(input) + " and output " +
                              describe(output) + " need one dtype and a "
                              "dim 0 to split");
    auto blocks = [&](const at::Tensor& t, std::vector<int64_t> splits,
                      const char* which) {
      int64_t rows = t.size(0);
      if (splits.empty()) {
        if (rows % size_ != 0)
          invalid("alltoall", std::string(which) + " dim 0 (" +
                                  std::to_string(rows) +
                                  ") is not a multiple of " +
                                  std::to_string(size_));
        splits.assign(size_, rows / size_);
      }
      if (static_cast<int>(splits.size()) != size_)
        invalid("alltoall", std::string(which) +
                                " split sizes need one entry per rank");
      size_t row = t.element_size();  // bytes of one row, also when empty
      for (int64_t d = 1; d < t.dim(); d++)
        row *= static_cast<size_t>(t.size(d));
      Blocks b;
      int64_t sum = 0;
      for (auto n : splits) {
        if (n < 0)
          invalid("alltoall", std::string(which) + " split size " +
                                  std::to_string(n) + " is negative");
        sum += n;
        b.add(static_cast<size_t>(n) * row);
      }
      if (sum != rows)
        invalid("alltoall", std::string(which) + " split sizes add up to " +
                                std::to_string(sum) + ", dim 0 is " +
                                std::to_string(rows));
      return b;
    };
    auto sb = blocks(input, inputSplits, "input");
    auto rb = blocks(output, outputSplits, "output");
    auto src = input.contiguous();
    auto dst = output.contiguous();
    op->keep.insert(op->keep.end(), {src, dst});
    copyBack(op, output, dst);
    start(op, [&](weft_request_t* r) {
      return weft_ialltoallv(src.data_ptr(), sb.counts.data(),
                             sb.displs.data(), dst.data_ptr(),
                             rb.counts.data(), rb.displs.data(), WEFT_UINT8,
                             comm_, r);
    });
  }
  return finish(OpType::ALLTOALL_BASE, "weft:all_to_all", op, {output},
                TensorList{input});
}

c10::intrusive_ptr<Work> WeftBackend::alltoall(
    TensorList& outputs, TensorList& inputs,
    const c10d::AllToAllOptions& opts) {
  checkCpu(outputs, "alltoall");
  checkCpu(inputs, "alltoall");
  if (static_cast<int>(outputs.size()) != size_ ||
      static_cast<int>(inputs.size()) != size_)
    invalid("alltoall", "needs one input and one output tensor per rank");
  auto op = newOp("alltoall", opts.timeout);
  // weft_ialltoallv, also when this rank's tensors are all one size: a
  // rank cannot see whether the others' are, and every rank must call the
  // same collective.  Each block's receiver checks its length.
  auto sb = byteBlocks(inputs);
  auto rb = byteBlocks(outputs);
  auto src = pack(inputs, sb);
  auto dst = byteBuffer(rb.total);
  op->keep.insert(op->keep.end(), {src, dst});
  start(op, [&](weft_request_t* r) {
    return weft_ialltoallv(src.data_ptr(), sb.counts.data(), sb.displs.data(),
                           dst.data_ptr(), rb.counts.data(), rb.displs.data(),
                           WEFT_UINT8, comm_, r);
  });
  unpackLater(op, dst, outputs, rb);
  return finish(OpType::ALLTOALL, "weft:all_to_all", op, outputs, inputs);
}

// ---- barriers -----------------------------------------------------------

c10::intrusive_ptr<Work> WeftBackend::barrier(
    const c10d::BarrierOptions& opts) {
  auto op = newOp("barrier", opts.timeout, opts.asyncOp);
  if (op->callerWaits)
    run(op, [&] { return weft_barrier(comm_); });
  else
    start(op, [&](weft_request_t* r) { return weft_ibarrier(comm_, r); });
  return finish(OpType::BARRIER, "weft:barrier", op, {});
}

// gloo's protocol over weft's point-to-point: every rank sends rank 0 a
// token and waits for its answer; rank 0 waits for every token up to the
// timeout and names the ranks that did not arrive (the first, or all of
// them with waitAllRanks).  The timeout is the options' (zero is zero),
// the group's when unset; the errors say what gloo's say, in its words.
// The other ranks wait for rank 0's answer as gloo's do, up to the group's
// timeout; rank 0 answers every rank, "failed" when it raises, so that
// the ranks that arrived (and any that arrive late) learn it at once.
void WeftBackend::monitoredBarrier(const c10d::BarrierOptions& opts,
                                   bool waitAllRanks) {
  constexpr uint8_t kHere = 1, kPass = 1, kFail = 2;
  auto timeout = opts.timeout.count() >= 0 ? opts.timeout : timeout_;
  auto ms = std::to_string(timeout.count());
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // rank 0: tokens[p] from rank p, answers[p] to it; others: [0] sent,
  // [1] received
  auto tokens = at::zeros({std::max(size_, 2)}, at::kByte);
  auto answers = at::zeros({std::max(size_, 2)}, at::kByte);
  std::vector<weft_request_t> reqs;  // every request, freed by release()
  auto post = [&](uint8_t* buf, int peer, bool send) {
    weft_request_t r = nullptr;
    int st = send ? weft_isend(buf, 1, WEFT_UINT8, peer, comm_, &r)
                  : weft_irecv(buf, 1, WEFT_UINT8, peer, comm_, &r);
    if (st != WEFT_OK)
      std::rethrow_exception(weftError(st, "monitored_barrier", comm_));
    reqs.push_back(r);
    return r;
  };
  auto release = [&] {  // buffers outlive whatever is still posted
    releaseLater(std::move(reqs), {tokens, answers});
  };
  if (rank_ != 0) {
    bytes(tokens)[0] = kHere;
    post(bytes(tokens), 0, true);
    int st = weft_wait(post(bytes(tokens) + 1, 0, false));
    uint8_t answer = bytes(tokens)[1];
    release();
    if (st != WEFT_OK || answer != kPass)
      throw WeftException(
          st == WEFT_OK ? WEFT_ERR_REMOTE : st, "monitored_barrier",
          "Rank " + std::to_string(rank_) +
              " successfully reached monitoredBarrier, but received errors "
              "while waiting for send/recv from rank 0. Please check rank 0 "
              "logs for faulty rank. (weft: " +
              (st == WEFT_OK ? std::string("rank 0 answered that the "
                                           "barrier failed")
                             : std::string(weft_status_name(
                                   static_cast<weft_status_t>(st)))) +
              ")");
    return;
  }
  std::vector<weft_request_t> from(size_, nullptr);
  for (int p = 1; p < size_; p++)
    from[p] = post(bytes(tokens) + p, p, false);
  // Waits for rank p's token until the deadline: true when it came.
  auto arrived = [&](int p) {
    int st;
    while ((st = weft_test(from[p])) == WEFT_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return st == WEFT_OK;  // not arrived in time, or its link failed
  };
  std::vector<int> missing, processed;
  std::string outOfTime;  // gloo's words when no time was left for a rank
  for (int p = 1; p < size_; p++) {
    // Without waitAllRanks, a rank whose token is not there when the time
    // is up is not waited for: rank 0 itself ran out of time (gloo).
    if (!waitAllRanks && weft_test(from[p]) == WEFT_INPROGRESS &&
        std::chrono::steady_clock::now() >= deadline) {
      std::string done;
      for (size_t i = 0; i < processed.size(); i++)
        done += (i ? ", " : "") + std::to_string(processed[i]);
      outOfTime = "\n Rank 0 timed out in monitoredBarrier after " + ms +
                  " ms.\n" +
                  (processed.empty()
                       ? "No ranks successfully processed in monitoredBarrier."
                       : "Successfully processed ranks: " + done);
      missing.push_back(p);
      break;
    }
    if (arrived(p)) {
      processed.push_back(p);
    } else {
      missing.push_back(p);
      if (!waitAllRanks)
        break;
    }
  }
  for (int p = 1; p < size_; p++) {
    bytes(answers)[p] = missing.empty() ? kPass : kFail;
    post(bytes(answers) + p, p, true);
  }
  if (!missing.empty()) {
    release();
    std::string who;
    for (size_t i = 0; i < missing.size(); i++)
      who += (i ? ", " : "") + std::to_string(missing[i]);
    throw c10::DistBackendError(
        {__func__, __FILE__, uint32_t(__LINE__)},
        "[Rank 0]: " + std::string(missing.size() > 1 ? "Ranks " : "Rank ") +
            who + " failed to pass monitoredBarrier in " + ms + " ms (weft)" +
            outOfTime);
  }
  release();  // the answers are on their way
}

// ---- point-to-point -----------------------------------------------------
// torch's tag is weft's: messages of one pair and tag match in posting
// order, different tags independently.

c10::intrusive_ptr<Work> WeftBackend::send(TensorList& tensors, int dstRank,
                                           int tag) {
  checkCpu(tensors, "send");
  auto op = newOp("send", std::chrono::milliseconds(0));
  for (auto& t : tensors) {
    auto buf = t.contiguous();
    op->keep.push_back(buf);
    start(op, [&](weft_request_t* r) {
      return weft_isend_tag(buf.data_ptr(), nbytes(buf), WEFT_UINT8, dstRank,
                            tag, comm_, r);
    });
  }
  return finish(OpType::SEND, "weft:send", op, tensors, tensors);
}

c10::intrusive_ptr<Work> WeftBackend::recv(TensorList& tensors, int srcRank,
                                           int tag) {
  checkCpu(tensors, "recv");
  if (srcRank == WEFT_ANY_SOURCE && tensors.size() != 1)
    invalid("recv", "a receive from any source takes one tensor, not " +
                        std::to_string(tensors.size()));
  auto op = newOp("recv", std::chrono::milliseconds(0));
  op->wantSource = true;
  for (auto& t : tensors) {
    auto buf = t.contiguous();
    op->keep.push_back(buf);
    copyBack(op, t, buf);
    start(op, [&](weft_request_t* r) {
      return weft_irecv_tag(buf.data_ptr(), nbytes(buf), WEFT_UINT8, srcRank,
                            tag, comm_, r);
    });
  }
  return finish(OpType::RECV, "weft:recv", op, tensors, std::nullopt);
}

// The sender is the Work's sourceRank() once it is done.
c10::intrusive_ptr<Work> WeftBackend::recvAnysource(TensorList& tensors,
                                                    int tag) {
  return recv(tensors, WEFT_ANY_SOURCE, tag);
}

void WeftBackend::setSequenceNumberForGroup() { seq_ = 0; }

uint64_t WeftBackend::getSequenceNumberForGroup() { return seq_; }

}  // namespace weft_torch
