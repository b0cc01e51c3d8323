// EventRecorder (operator/kube/event_recorder.h) over a scripted transport: what an Event
// carries, that recording never blocks, the queue bound, the pacing and the refusals it drops.
// That the apiserver accepts these Events is covered by the controller's and the scheduler's
// integration tests.
#include "operator/kube/event_recorder.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/rfc3339.h"
#include "tests/testing/fake_transport.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const InvolvedObject kJob{"lockstep.dev/v1alpha1", "TrainingJob", "ns", "job", "uid-1", "42"};

class EventRecorderTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  std::vector<json> Written() const {
    return transport_->BodiesTo("POST", "/api/v1/namespaces/ns/events");
  }
};

TEST_F(EventRecorderTest, AnEventNamesItsObjectReasonAndSource) {
  EventRecorderOptions options;
  options.component = "lockstep-scheduler";
  options.instance = "operator-0";
  EventRecorder events(client_, options, clock_);
  events.Record(kJob, "Warning", "Unschedulable", std::string(3000, 'm'));
  events.Record(kJob, "Normal", "Running", "all 2 pods are running");
  ASSERT_TRUE(events.Flush(seconds(10)));

  const std::vector<json> written = Written();
  ASSERT_EQ(written.size(), 2u);
  const json& e = written[0];
  EXPECT_EQ(e["involvedObject"]["kind"], "TrainingJob");
  EXPECT_EQ(e["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(e["involvedObject"]["resourceVersion"], "42");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "Unschedulable");
  EXPECT_EQ(e["message"].get<std::string>().size(), 1024u);  // the apiserver's limit
  EXPECT_EQ(e["source"]["component"], "lockstep-scheduler");
  EXPECT_EQ(e["reportingComponent"], "lockstep-scheduler");
  EXPECT_EQ(e["reportingInstance"], "operator-0");
  EXPECT_EQ(e["firstTimestamp"], FormatTime(clock_.WallNow()));
  EXPECT_EQ(e["count"], 1);
  const std::string name = e["metadata"]["name"];
  EXPECT_EQ(name.rfind("job.", 0), 0u) << name;
  EXPECT_NE(name, written[1]["metadata"]["name"].get<std::string>());  // same instant, new name
}

// A write that hangs holds the writer, never the caller; a full queue drops (and counts) events.
TEST_F(EventRecorderTest, RecordNeverBlocksAndAFullQueueDrops) {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  transport_->SetHandler([&](const Request&) -> StatusOr<Response> {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
    return Response{201, "{}", ""};
  });
  EventRecorderOptions options;
  options.max_queued = 2;
  EventRecorder events(client_, options, clock_);
  events.Record(kJob, "Normal", "First", "taken by the writer, which waits in the transport");
  // Once the writer holds the first, two fit in the queue and the fourth is dropped.
  for (int i = 0; i < 200 && transport_->requests().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(transport_->requests().size(), 1u);  // no ASSERT: the writer must be released
  events.Record(kJob, "Normal", "Second", "");
  events.Record(kJob, "Normal", "Third", "");
  events.Record(kJob, "Normal", "Fourth", "");
  EXPECT_EQ(events.dropped(), 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  EXPECT_EQ(EventReasons(events), (std::vector<std::string>{"First", "Second", "Third"}));
}

// The writer takes tokens from a bucket: past the burst, writes wait for the rate.
TEST_F(EventRecorderTest, WritesPastTheBurstArePaced) {
  EventRecorderOptions options;
  options.qps = 20;  // one token per 50 ms; the fake clock never refills the bucket
  options.burst = 2;
  EventRecorder events(client_, options, clock_);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) events.Record(kJob, "Normal", "Tick", std::to_string(i));
  ASSERT_TRUE(events.Flush(seconds(10)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));  // 50 + 100 ms waits
  EXPECT_EQ(Written().size(), 4u);
}

TEST_F(EventRecorderTest, RefusalsAreDroppedNotRetried) {
  transport_->Push(ApiStatus(403, "Forbidden", "namespace ns is being terminated"));
  transport_->Push(ApiStatus(500, "InternalError", "etcd is unhappy"));
  EventRecorder events(client_, EventRecorderOptions{}, clock_);
  events.Record(kJob, "Normal", "A", "");
  events.Record(kJob, "Normal", "B", "");
  events.Record(kJob, "Normal", "C", "");
  ASSERT_TRUE(events.Flush(seconds(10)));
  EXPECT_EQ(transport_->requests().size(), 3u);  // one try each; the third is written
}

TEST_F(EventRecorderTest, StoppingWithQueuedEventsReturns) {
  transport_->SetHandler([](const Request&) -> StatusOr<Response> {
    std::this_thread::sleep_for(milliseconds(20));
    return Response{201, "{}", ""};
  });
  {
    EventRecorder events(client_, EventRecorderOptions{}, clock_);
    for (int i = 0; i < 50; ++i) events.Record(kJob, "Normal", "Many", "");
  }
  EXPECT_LT(transport_->requests().size(), 50u);
}

}  // namespace
}  // namespace lockstep::kube
