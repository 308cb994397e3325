// ferrite/pmem/root_scope.h — a process-wide prefix for root names (tools).
//
// Every root name given to Pool::create_root, Pool::root and Pool::has_root
// (and so to every structure's create/attach, which name their roots after
// the name they are given) is looked up as scope + name. A tool that puts
// several registered crash subjects — which all call their root "subject" —
// into ONE pool (`ferrite fuzz-pool`) sets a scope per subject around its
// create and attach. Pool::roots() and the header hold the full names.
// Empty by default: no effect. Not on media.
//
// Thread safety: set it only while no other thread uses a pool (the tool is
// single-threaded around it); reading it is unsynchronized.
#pragma once

#include <string>

namespace ferrite::pmem {

void set_root_scope(std::string prefix);
const std::string& root_scope();

// Sets a scope for the lifetime of the object and restores the previous one.
class RootScope {
 public:
  explicit RootScope(std::string prefix) : prev_(root_scope()) { set_root_scope(std::move(prefix)); }
  ~RootScope() { set_root_scope(prev_); }
  RootScope(const RootScope&) = delete;
  RootScope& operator=(const RootScope&) = delete;

 private:
  std::string prev_;
};

}  // namespace ferrite::pmem
