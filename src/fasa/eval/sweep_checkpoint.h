// A sweep's checkpoint: `fasa eval sweep` appends one JSON line per finished task to
// DIR/checkpoint.jsonl, after a header line naming everything the results depend on. An
// interrupted sweep started again with --resume reads it back, runs only the tasks it lacks, and
// refuses a checkpoint written for other settings (so results of two settings never mix).
//
// Line 1: {"format": "fasa-sweep-checkpoint", "version": 1, "model_sha256", "calib_sha256",
//          "tasks_sha256", "n_tasks", "n_ctx", "chat", "kv_type", "policies": [specs]
//          [, "shard": [I, N]] [, "protocol": "question-under-policy"]}
//          (shard: `--shard I/N`; absent for a whole sweep. protocol: absent for the dense-prefill
//          protocol)
// Then:   {"task": index, "id", "n_prompt", "prefill_seconds", "fasa_version",
//          "outcomes": [{"output", "score", "n_generated", "decode_ms", "attn": {...},
//                        "kv_resident_bytes"}]}
//          (kv_resident_bytes: absent in lines written before it was recorded, read back as 0;
//          the partial credit is not stored: it is recomputed from the output)
//          (fasa_version: the build that ran the task; absent in lines written before it was
//          recorded, read back as "")
//          (one outcome per policy, in the header's order; lines in the order tasks finished)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"

namespace fasa {

// What a sweep's results depend on. Threads and jobs are not part of it: results do not depend
// on them.
struct SweepIdentity {
  std::string model_sha256, calib_sha256, tasks_sha256, kv_type;
  int n_tasks = 0;
  int n_ctx = 0;  // as asked for (0: fitted to the tasks)
  bool chat = false;
  bool question_under_policy = false;  // the protocol
  std::vector<std::string> policies;   // [n_policies] specs, in order
  // `eval sweep --shard I/N` (count 0: not sharded): the header then holds "shard": [I, N], and
  // only tasks with index % N == I belong in the checkpoint.
  int shard_index = 0, shard_count = 0;
};

struct TaskDone {   // one finished task
  size_t task = 0;  // index in the task file
  std::string id;
  int n_prompt = 0;
  double prefill_seconds = 0.0;
  std::vector<TaskOutcome> outcomes;  // [n_policies]
  std::string fasa_version;           // the build that ran it ("" = not recorded)
};

// One line each, without the newline.
std::string checkpoint_header_line(const SweepIdentity& id);
std::string checkpoint_task_line(const TaskDone& done);

// Parses a checkpoint's text (`source` names it in errors) written for `want` over `tasks`.
// Throws fasa::Error naming the first setting that differs from `want`, or a bad line by number
// (bad JSON, a missing field, a task index or id that does not match the task file, a task given
// twice, a task of another shard, the wrong number of outcomes, a number out of its range). A last line without its
// newline (the process died while writing it) is dropped, not an error; *dropped_bytes (when
// given) says how long it was (0: none). Returns the finished tasks in file order.
std::vector<TaskDone> parse_checkpoint(const std::string& text, const std::string& source,
                                       const SweepIdentity& want, const std::vector<Task>& tasks,
                                       size_t* dropped_bytes = nullptr);

// Refuses (fasa::Error, naming `source`) finished tasks run by a build other than `current`,
// a line without a recorded build included: two builds may not compute the same bits, so their
// results are mixed only when the user says so (`fasa eval sweep --resume-other-build`).
void check_same_build(const std::vector<TaskDone>& done, const std::string& current,
                      const std::string& source);

// The checkpoint file of one sweep.
class CheckpointFile {
 public:
  // A file at `path` that exists is refused unless `resume` (it holds an unfinished sweep); with
  // `resume` it is read (parse_checkpoint; a missing file is a fresh start) and written back
  // (crash-safely: io/atomic_file.h) without a cut-short last line, which it warns about on
  // stderr, so appending continues on a clean line. Throws fasa::Error.
  CheckpointFile(std::string path, const SweepIdentity& id, const std::vector<Task>& tasks,
                 bool resume);
  ~CheckpointFile();
  CheckpointFile(const CheckpointFile&) = delete;
  CheckpointFile& operator=(const CheckpointFile&) = delete;
  const std::vector<TaskDone>& done() const { return done_; }  // read back by --resume
  // One line, with one write() and an fsync; throws fasa::Error if it cannot write.
  void append(const TaskDone& d);
  void remove();           // the sweep finished: its results.json holds everything
  void remove_if_empty();  // the sweep failed before finishing any task

 private:
  std::string path_;
  std::vector<TaskDone> done_;
  size_t n_appended_ = 0;
  int fd_ = -1;  // O_APPEND
  void close();
};

}  // namespace fasa
