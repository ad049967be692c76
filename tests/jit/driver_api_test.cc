// DefaultStreamCapturing over a fake driver table: which streams it asks, in
// which order, and what each answer means.
#include "jit/driver_api.h"

#include <vector>

#include "gtest/gtest.h"

namespace jitgemm::jit {
namespace {

struct Answer {
  CUresult result = CUDA_SUCCESS;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
};

// The fake's answers per stream and the streams it was asked about.
Answer g_per_thread, g_legacy;
std::vector<CUstream> g_asked;

CUresult FakeIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  g_asked.push_back(stream);
  const Answer& a = stream == CU_STREAM_PER_THREAD ? g_per_thread : g_legacy;
  *status = a.status;
  return a.result;
}

class DefaultStreamCapturingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_per_thread = g_legacy = Answer{};
    g_asked.clear();
    api_.cuStreamIsCapturing = FakeIsCapturing;
  }
  DriverApi api_{};
};

TEST_F(DefaultStreamCapturingTest, NoCaptureAsksBothStreams) {
  EXPECT_FALSE(DefaultStreamCapturing(api_));
  EXPECT_EQ(g_asked, (std::vector<CUstream>{CU_STREAM_PER_THREAD, CU_STREAM_LEGACY}));
}

// compute-sanitizer reports the legacy stream's CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
// as an API error: a per-thread capture must not provoke it.
TEST_F(DefaultStreamCapturingTest, PerThreadCaptureNeverAsksTheLegacyStream) {
  g_per_thread.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  g_legacy.result = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  EXPECT_TRUE(DefaultStreamCapturing(api_));
  EXPECT_EQ(g_asked, (std::vector<CUstream>{CU_STREAM_PER_THREAD}));
}

TEST_F(DefaultStreamCapturingTest, LegacyStreamCaptureOrABlockingStreamsCounts) {
  g_legacy.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_TRUE(DefaultStreamCapturing(api_));
  g_legacy = Answer{CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, CU_STREAM_CAPTURE_STATUS_NONE};
  EXPECT_TRUE(DefaultStreamCapturing(api_)) << "a blocking stream captures";
  g_legacy.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  g_legacy.result = CUDA_SUCCESS;
  EXPECT_TRUE(DefaultStreamCapturing(api_)) << "an invalidated capture is still one";
}

TEST_F(DefaultStreamCapturingTest, OtherErrorsAreNoCapture) {
  g_per_thread.result = CUDA_ERROR_NOT_INITIALIZED;
  g_legacy.result = CUDA_ERROR_INVALID_CONTEXT;
  g_per_thread.status = g_legacy.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;  // not to be read
  EXPECT_FALSE(DefaultStreamCapturing(api_));
}

}  // namespace
}  // namespace jitgemm::jit
