// src/pmem/backend.cc — one persistence backend per process: the first pool
// to open installs its PoolOptions::backend (the sim backend attaches the
// pool's range to the crash simulator), later pools must ask for the same
// one (kBackendConflict), and when the last pool closes the backend that
// was installed before the first one opened is restored.
#include <mutex>

#include "internal.h"

namespace ferrite::pmem::detail {

namespace {
// Process-wide registry of open pools and their backend.
struct Registry {
  std::mutex mu;
  int open = 0;
  persist::BackendConfig cfg{};
  const persist::Backend* saved = nullptr;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

void register_backend(const persist::BackendConfig& cfg, char* base, std::size_t size, const std::string& path) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  if (r.open > 0 && !(r.cfg == cfg))
    fail(Errc::kBackendConflict, path,
         "asks for backend '" + cfg.to_string() + "' but pools already open in this process use '" +
             r.cfg.to_string() + "'");
  const persist::Backend* b = nullptr;
  try {
    b = cfg.kind == persist::BackendConfig::Kind::kSim ? persist::sim_attach(base, size) : persist::make_backend(cfg);
  } catch (const std::exception& e) {
    fail(Errc::kInvalidArgument, path, std::string("backend: ") + e.what());
  }
  if (r.open == 0) r.saved = persist::installed();
  persist::install(b);
  r.cfg = cfg;
  ++r.open;
}

void unregister_backend(const persist::BackendConfig& cfg, char* base) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  if (cfg.kind == persist::BackendConfig::Kind::kSim) persist::sim_detach(base);
  if (--r.open == 0) persist::install(r.saved);
}

}  // namespace ferrite::pmem::detail
