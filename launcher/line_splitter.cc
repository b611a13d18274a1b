#include "launcher/line_splitter.h"

namespace coach::launcher {

void LineSplitter::Feed(absl::string_view data, const Emit& emit) {
  buf_.append(data.data(), data.size());
  size_t start = 0;  // buf_[0, start) has been emitted
  size_t i = scanned_;
  for (; i < buf_.size(); ++i) {
    const char c = buf_[i];
    bool end = c == '\n';
    if (c == '\r') {
      if (i + 1 == buf_.size()) break;  // wait for the next byte: it may be '\n'
      end = buf_[i + 1] != '\n';
    }
    if (!end && i + 1 - start < max_piece_) continue;
    // One piece: buf_[start, i]. Emitted from a view of the front of the buffer.
    const absl::string_view piece(buf_.data() + start, i + 1 - start);
    const bool ends_line = c == '\n';
    emit(LinePiece{piece, at_line_start_, at_line_start_ && ends_line});
    at_line_start_ = ends_line;
    start = i + 1;
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
