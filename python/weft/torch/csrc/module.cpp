// The Python module weft.torch._weft_c10d: the native backend's creator,
// and WeftException raised as weft.torch.WeftError.
#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/extension.h>

#include "backend.hpp"

namespace py = pybind11;

namespace weft_torch {
namespace {

// torch names a plugin backend's process group "custom" (its
// BackendType); this one carries its own name, which DDP's logging
// reports.  It stays "weft" under any registered name: torch's C++ keys
// backend-specific reads on it (DDP's logger reads ProcessGroupGloo's
// thread count from a group named "gloo").
class WeftProcessGroup : public c10d::ProcessGroup {
 public:
  using ProcessGroup::ProcessGroup;
  const std::string getBackendName() const override { return "weft"; }
};

c10::intrusive_ptr<c10d::ProcessGroup> createProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    uintptr_t comm, std::chrono::milliseconds timeout,
    const std::string& registeredAs) {
  auto backend = c10::make_intrusive<WeftBackend>(
      reinterpret_cast<weft_comm_t>(comm), rank, size, timeout,
      registeredAs);
  auto pg = c10::make_intrusive<WeftProcessGroup>(store, rank, size);
  auto type = c10d::ProcessGroup::BackendType::CUSTOM;
  pg->setBackend(c10::DeviceType::CPU, type, backend);
  pg->setDefaultBackend(type);
  return pg;
}

}  // namespace
}  // namespace weft_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace weft_torch;
  py::module::import("torch.distributed");
  m.doc() = "weft's c10d backend (C++ over libweft)";
  py::class_<WeftBackend, c10d::Backend, c10::intrusive_ptr<WeftBackend>>(
      m, "WeftBackend")
      .def_property_readonly("comm_handle", [](const WeftBackend& b) {
        return reinterpret_cast<uintptr_t>(b.comm());
      });
  m.def("create_process_group", &createProcessGroup, py::arg("store"),
        py::arg("rank"), py::arg("size"), py::arg("comm"),
        py::arg("timeout"), py::arg("registered_as") = "weft",
        "A ProcessGroup named 'weft' over a new WeftBackend that owns "
        "`comm` (a weft_comm_t as an integer); its profiler titles are "
        "'<registered_as>:<op>'.",
        py::call_guard<py::gil_scoped_release>());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const WeftException& e) {
      auto cls = py::module::import("weft.torch._errors").attr("WeftError");
      py::object exc = cls(e.status, e.what, e.detail);
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
}
