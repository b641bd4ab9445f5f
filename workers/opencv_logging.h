// OpenCV logs through a logger of its own, which --log-level does not reach: an image it
// cannot read printed a warning per decode, every epoch. Every failure it describes comes
// back to us as a Status that forkfeed reports with the file's path, so its messages are
// detail, shown at our debug and trace levels only.
#pragma once

namespace forkfeed {

// Sets OpenCV's log level (process-wide) from an spdlog level number (0 trace .. 6 off).
// Called wherever OpenCV decodes: in each worker process and in the bench's --probe.
void follow_log_level_in_opencv(int spdlog_level);

}  // namespace forkfeed
