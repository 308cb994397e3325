// adapters/libcds_runtime.h — libcds (Debian libcds-dev, external code) needs
// cds::Initialize() and one Hazard Pointer GC object per process, and every
// thread that touches a container attached to it.
#pragma once

#ifdef FERRITE_HAVE_LIBCDS
#include <cds/gc/hp.h>
#include <cds/init.h>

namespace ferrite::adapters {

// Created on first use and kept for the process's life (destroying the HP
// singleton while a detached thread's retired list is pending is a libcds
// error, and it is cheap to keep). The harness creates and destroys
// instances on its own thread, and a container's destructor retires nodes
// through the calling thread's HP record: this thread is attached too.
inline void libcds_runtime() {
  // A volatile static keeps the object reachable (LeakSanitizer reports an
  // object whose only pointer was dropped, and the compiler may drop a store
  // to a static that is never read).
  static cds::gc::HP* volatile const hp = [] {
    cds::Initialize();
    return new cds::gc::HP(/*hazard ptrs per thread*/ 0, /*max threads*/ 256);
  }();
  (void)hp;
  if (!cds::threading::Manager::isThreadAttached()) cds::threading::Manager::attachThread();
}

// Worker threads attach before their first operation and detach at the end.
struct LibcdsThreads {
  template <class H>
  static void thread_init(H&, int) { cds::threading::Manager::attachThread(); }
  template <class H>
  static void thread_exit(H&, int) { cds::threading::Manager::detachThread(); }
};

}  // namespace ferrite::adapters
#endif  // FERRITE_HAVE_LIBCDS
