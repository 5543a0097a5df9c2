// Interruption points (core/interrupt.h): a check installed on the calling thread runs before
// every forward step, a check that throws stops a prefill between chunks with the session
// holding the chunks before it, and the task runner's job threads take the caller's check.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "fasa/core/interrupt.h"
#include "fasa/engine/session.h"
#include "fasa/eval/task_runner.h"
#include "support/tiny_byte_model.h"

namespace fasa {
namespace {

struct Stop : std::runtime_error {
  Stop() : std::runtime_error("stopped") {}
};

TEST(Interrupt, ScopesNestAndBelongToTheirThread) {
  EXPECT_EQ(current_interrupt_check(), nullptr);
  int calls = 0;
  const InterruptCheck count = [&calls] { ++calls; };
  {
    const InterruptScope outer(&count);
    interruption_point();
    {
      const InterruptScope none(nullptr);
      interruption_point();  // no check here
      std::thread([] { EXPECT_EQ(current_interrupt_check(), nullptr); }).join();
    }
    EXPECT_EQ(current_interrupt_check(), &count);
    interruption_point();
  }
  EXPECT_EQ(current_interrupt_check(), nullptr);
  interruption_point();
  EXPECT_EQ(calls, 2);
}

TEST(Interrupt, PrefillStopsBetweenChunksAndContinues) {
  const auto model = test::tiny_byte_model("interrupt.gguf", false);
  const int n_vocab = model->config().n_vocab;
  const std::vector<int32_t> prompt = test::random_prompt(64, n_vocab, 7);  // 4 chunks of 16
  Session whole(model, test::tiny_session("full", 128));
  const std::vector<float> want = whole.prefill(prompt);

  Session s(model, test::tiny_session("full", 128));
  int steps = 0;
  const InterruptCheck third_stops = [&steps] {
    if (++steps == 3) throw Stop();
  };
  {
    const InterruptScope scope(&third_stops);
    EXPECT_THROW(s.prefill(prompt), Stop);
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(s.n_past(), 32);  // the two chunks before the third step
  const std::vector<int32_t> rest(prompt.begin() + 32, prompt.end());
  EXPECT_EQ(s.prefill(rest), want);  // the same chunks, the same bits
  // A decode step too.
  const InterruptCheck always = [] { throw Stop(); };
  {
    const InterruptScope scope(&always);
    EXPECT_THROW(s.decode(5), Stop);
  }
  EXPECT_EQ(s.n_past(), 64);
  EXPECT_EQ(s.decode(5), whole.decode(5));
}

TEST(Interrupt, TaskJobThreadsTakeTheCallersCheck) {
  const auto model = test::tiny_byte_model("interrupt_tasks.gguf", false);
  std::vector<Task> tasks;
  for (const char* id : {"a", "b", "c", "d", "e", "f", "g", "h"}) {
    tasks.push_back({id, "echo", std::string("say xy ") + id, {"xy"}, 3, TaskMetric::Contains});
  }
  TaskRunOptions o;
  o.policies = {"full"};
  o.jobs = 2;
  std::mutex mu;
  std::set<std::thread::id> threads;
  const InterruptCheck record = [&] {
    {
      const std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no thread runs every task
  };
  {
    const InterruptScope scope(&record);
    run_tasks(model, tasks, o, nullptr);
  }
  EXPECT_EQ(threads.size(), 2u);
  // A check that throws ends the run with its message, every job thread stopping.
  std::atomic<int> steps{0};
  const InterruptCheck stop = [&steps] {
    steps.fetch_add(1);
    throw Stop();
  };
  const InterruptScope scope(&stop);
  EXPECT_THROW(run_tasks(model, tasks, o, nullptr), std::exception);
  EXPECT_EQ(steps.load(), 8);  // each task's first step, and no more
}

}  // namespace
}  // namespace fasa
