// How prompts are cut into prefill chunks (Session::prefill and the server's scheduler).
#include <gtest/gtest.h>

#include "fasa/engine/session.h"

namespace fasa {
namespace {

TEST(PrefillChunkSize, LastChunkIsNeverOneTokenAlone) {
  EXPECT_EQ(prefill_chunk_size(40, 16), 16);
  EXPECT_EQ(prefill_chunk_size(16, 16), 16);
  EXPECT_EQ(prefill_chunk_size(5, 16), 5);
  EXPECT_EQ(prefill_chunk_size(17, 16), 15);  // 15 + 2, not 16 + 1
  EXPECT_EQ(prefill_chunk_size(2, 16), 2);
  EXPECT_EQ(prefill_chunk_size(1, 16), 1);  // a one-token prompt decodes
  EXPECT_EQ(prefill_chunk_size(7, 1), 1);   // so does chunk size 1
  EXPECT_EQ(prefill_chunk_size(3, 2), 1);   // 1 + 2
  // Every prompt length and chunk size: the chunks cover the prompt and only the cases above
  // end in a one-token chunk.
  for (int chunk = 1; chunk <= 9; ++chunk) {
    for (int n = 1; n <= 40; ++n) {
      int fed = 0, last = 0;
      while (fed < n) {
        last = prefill_chunk_size(n - fed, chunk);
        ASSERT_GE(last, 1);
        ASSERT_LE(last, chunk);
        fed += last;
      }
      EXPECT_EQ(fed, n);
      if (n > 1 && chunk > 1) {
        EXPECT_GT(last, 1) << n << " tokens in chunks of " << chunk;
      }
    }
  }
}

}  // namespace
}  // namespace fasa
