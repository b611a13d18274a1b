#pragma once

// `coach-launch --install DIR`: makes this executable runnable from DIR in an image that has
// none of its shared libraries (and no shell): copies
//   /proc/self/exe                       -> DIR/bin/coach-launch
//   every shared library loaded now      -> DIR/lib/<name the loader found it by>
//   the dynamic loader (PT_INTERP)       -> DIR/lib/ld.so
// so that `DIR/lib/ld.so --library-path DIR/lib DIR/bin/coach-launch ARGS...` runs it with
// the bundled glibc whatever the image has. The operator's init container runs this
// (operator/reconcile/launcher_wrap.h). Libraries opened later with dlopen are not copied;
// coach-launch opens none (glibc >= 2.34 has files and dns NSS built in).

#include <string>

#include "absl/status/status.h"

namespace coach::launcher {

// Creates DIR, DIR/bin and DIR/lib as needed and copies the files; an error names the file.
absl::Status SelfInstall(const std::string& dir);

}  // namespace coach::launcher
