// Completion of weft operations for the c10d backend (see work.hpp).
#include "work.hpp"

#include <ATen/core/ivalue.h>

namespace weft_torch {

namespace {

std::string errorText(int status, const std::string& what,
                      const std::string& message) {
  std::string text = "weft " + what + " failed: " + weft_status_name(
      static_cast<weft_status_t>(status)) + " (" +
      weft_strerror(static_cast<weft_status_t>(status)) + ")";
  if (!message.empty())
    text += ": " + message;
  // torch's tests and tools look for " Timed out " in a timeout
  if (status == WEFT_ERR_TIMEOUT)
    text = "weft " + what + " Timed out (ERR_TIMEOUT): " + message;
  return text;
}

}  // namespace

void releaseLater(std::vector<weft_request_t> reqs,
                  std::vector<at::Tensor> keep) {
  std::thread([reqs = std::move(reqs), keep = std::move(keep)]() mutable {
    for (auto r : reqs) {
      weft_wait(r);
      weft_request_free(r);
    }
    keep.clear();
  }).detach();
}

WeftException::WeftException(int status_, std::string what_,
                             std::string message)
    : c10::DistBackendError({__func__, __FILE__, uint32_t(__LINE__)},
                            errorText(status_, what_, message)),
      status(status_), what(std::move(what_)), detail(std::move(message)) {}

std::exception_ptr weftError(int status, const std::string& what,
                             weft_comm_t comm) {
  const char* msg = nullptr;
  if (comm != nullptr)
    weft_comm_get_error(comm, &msg);
  return std::make_exception_ptr(
      WeftException(status, what, msg != nullptr ? msg : ""));
}

OpState::~OpState() {
  // Dropped before completion is handled by WeftWork (the completion
  // thread); anything left here has ended.
  for (auto r : requests)
    weft_request_free(r);
}

bool OpState::poll() {
  {
    std::lock_guard<std::mutex> g(mu);
    if (finished)
      return true;
    if (claimed)
      return false;
  }
  for (auto r : requests)
    if (weft_test(r) == WEFT_INPROGRESS)
      return false;
  complete();
  return true;
}

void OpState::complete() {
  {
    std::unique_lock<std::mutex> g(mu);
    if (claimed) {
      cv.wait(g, [this] { return finished; });
      return;
    }
    claimed = true;
  }
  std::exception_ptr err;
  if (timeout.count() > 0) {
    auto deadline = start + timeout;
    bool pending = true;
    while (pending && std::chrono::steady_clock::now() < deadline) {
      pending = false;
      for (auto r : requests)
        pending = pending || weft_test(r) == WEFT_INPROGRESS;
      if (pending)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (pending) {
      err = std::make_exception_ptr(WeftException(
          WEFT_ERR_TIMEOUT, what,
          "Timed out waiting " + std::to_string(timeout.count()) +
              "ms for the operation's own timeout"));
      if (abandoned)
        *abandoned = true;
      releaseLater(std::move(requests), std::move(keep));
      requests.clear();
    }
  }
  for (auto r : requests) {
    int st = weft_wait(r);
    if (st != WEFT_OK && !err)
      err = weftError(st, what, comm);
  }
  int src = -1;
  if (wantSource && !err && requests.size() == 1 &&
      weft_request_source(requests[0], &src) == WEFT_OK)
    source = src;
  for (auto r : requests)
    weft_request_free(r);
  requests.clear();
  if (!err) {
    try {
      for (auto& fn : finalize)
        fn();
    } catch (...) {
      err = std::current_exception();
    }
  }
  finalize.clear();
  keep.clear();
  if (endProfiling) {
    endProfiling();
    endProfiling = nullptr;
  }
  {
    std::lock_guard<std::mutex> g(mu);
    error = err;
    finished = true;
  }
  cv.notify_all();
}

Completer::Completer() : thread_([this] { loop(); }) {}

Completer::~Completer() { stop(); }

void Completer::push(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Completer::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_)
      return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }
}

void Completer::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return;  // stopping, and every job served
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

WeftWork::WeftWork(int rank, c10d::OpType type, const char* profilingTitle,
                   std::vector<std::shared_ptr<OpState>> ops,
                   std::shared_ptr<Completer> completer,
                   std::vector<at::Tensor> result,
                   const std::optional<std::vector<at::Tensor>>& inputs)
    : Work(rank, type, profilingTitle, inputs), ops_(std::move(ops)),
      completer_(std::move(completer)), result_(std::move(result)) {
  // The profiling range ends when the operation does, in whichever thread
  // completes it.
  if (recordFunctionEndCallback_ && !ops_.empty()) {
    ops_.back()->endProfiling = std::move(recordFunctionEndCallback_);
    recordFunctionEndCallback_ = nullptr;
  }
}

WeftWork::~WeftWork() {
  // Dropped before it ended: the buffers must outlive the operation, so
  // the completion thread finishes it.
  bool pending = false;
  for (auto& op : ops_) {
    std::lock_guard<std::mutex> g(op->mu);
    pending = pending || !op->claimed;
  }
  if (pending && completer_) {
    auto ops = std::move(ops_);
    completer_->push([ops = std::move(ops)] {
      for (auto& op : ops)
        op->complete();
    });
  }
}

bool WeftWork::isCompleted() {
  for (auto& op : ops_)
    if (!op->poll())
      return false;
  return true;
}

bool WeftWork::isSuccess() const {
  for (auto& op : ops_) {
    std::lock_guard<std::mutex> g(op->mu);
    if (!op->finished || op->error)
      return false;
  }
  return true;
}

int WeftWork::sourceRank() const {
  for (auto& op : ops_) {
    std::lock_guard<std::mutex> g(op->mu);
    if (op->finished && op->source >= 0)
      return op->source;
  }
  throw WeftException(WEFT_ERR_INVALID_USAGE, "sourceRank",
                      "the sender is known once a completed receive says "
                      "so: wait() for it first");
}

std::exception_ptr WeftWork::exception() const {
  for (auto& op : ops_) {
    std::lock_guard<std::mutex> g(op->mu);
    if (op->error)
      return op->error;
  }
  return nullptr;
}

std::vector<at::Tensor> WeftWork::result() { return result_; }

bool WeftWork::wait(std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) {
    // A deadline on this wait only: completion goes to the thread.
    handOver();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (auto& op : ops_) {
      std::unique_lock<std::mutex> g(op->mu);
      if (!op->cv.wait_until(g, deadline, [&] { return op->finished; })) {
        if (op->abandoned)
          *op->abandoned = true;
        throw WeftException(
            WEFT_ERR_TIMEOUT, op->what,
            "Work.wait(timeout) Timed out waiting " +
                std::to_string(timeout.count()) + "ms");
      }
    }
  } else {
    for (auto& op : ops_)
      op->complete();
  }
  if (auto e = exception())
    std::rethrow_exception(e);
  return true;
}

void WeftWork::handOver() {
  auto ops = ops_;
  completer_->push([ops = std::move(ops)] {
    for (auto& op : ops)
      op->complete();
  });
}

c10::intrusive_ptr<c10::ivalue::Future> WeftWork::getFuture() {
  std::lock_guard<std::mutex> g(futureMu_);
  if (future_)
    return future_;
  future_ = c10::make_intrusive<c10::ivalue::Future>(
      c10::ListType::create(c10::TensorType::get()));
  auto ops = ops_;
  auto fut = future_;
  auto res = result_;
  auto settle = [ops, fut, res] {
    std::exception_ptr err;
    for (auto& op : ops) {
      op->complete();
      if (op->error && !err)
        err = op->error;
    }
    if (err)
      fut->setError(err);
    else
      fut->markCompleted(c10::IValue(res));
  };
  bool finished = true;
  for (auto& op : ops_) {
    std::lock_guard<std::mutex> g(op->mu);
    finished = finished && op->finished;
  }
  if (finished)   // already waited for: the future is done at once
    settle();
  else
    completer_->push(std::move(settle));
  return future_;
}

void WeftWork::abort() {
  TORCH_CHECK(false, "weft: Work.abort() is not supported; abort the "
                     "process group instead");
}

}  // namespace weft_torch
