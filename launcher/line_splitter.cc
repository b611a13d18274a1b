#include "launcher/line_splitter.h"

#include <cstring>

namespace coach::launcher {

void LineSplitter::Feed(absl::string_view data, const Emit& emit) {
  buf_.append(data.data(), data.size());
  size_t start = 0;  // buf_[0, start) has been emitted
  size_t i = scanned_;
  // memchr rather than a byte loop: this runs over every byte every worker prints.
  while (i < buf_.size()) {
    const char* base = buf_.data();
    const size_t size = buf_.size();
    const void* nl = std::memchr(base + i, '\n', size - i);
    const size_t nl_at = nl != nullptr ? static_cast<const char*>(nl) - base : size;
    const void* cr = std::memchr(base + i, '\r', nl_at - i);
    size_t at = cr != nullptr ? static_cast<const char*>(cr) - base : nl_at;
    const size_t limit = start + max_piece_ - 1;  // the last byte a piece may hold
    bool ends_line = false;
    if (limit < at) {
      at = limit;  // a chunk of an over-long line
    } else if (at == size) {
      i = size;
      break;
    } else if (buf_[at] == '\r') {
      if (at + 1 == size) {  // wait for the next byte: it may be '\n'
        i = at;
        break;
      }
      if (buf_[at + 1] == '\n') {  // "\r\n": the '\n' ends the piece
        i = at + 1;
        continue;
      }
    } else {
      ends_line = true;
    }
    emit(LinePiece{absl::string_view(base + start, at + 1 - start), at_line_start_,
                   at_line_start_ && ends_line});
    at_line_start_ = ends_line;
    start = at + 1;
    i = start;
  }
  buf_.erase(0, start);
  scanned_ = i - start;
}

void LineSplitter::Flush(const Emit& emit) {
  if (buf_.empty()) return;
  // A held tail never ends in '\n' (that would have been emitted), so the next byte, if any
  // ever comes, does not start a line.
  emit(LinePiece{buf_, at_line_start_, false});
  at_line_start_ = false;
  buf_.clear();
  scanned_ = 0;
}

}  // namespace coach::launcher
