// forkfeed::Client through forkfeedd: the same batches, order, pixels, state() and
// reset semantics as an in-process Loader with the same options; four ranks served at
// once each get their share exactly once; resume through state() across the socket;
// interrupt() ends a wait on a stuck stream.
//
// Over 300 lines on purpose: each Loader promise checked again through the daemon,
// against the same in-process Loader; splitting it would copy the fixture.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::Batches;
using testing::BatchRecord;

constexpr std::uint32_t kImages = 23;

class ClientStreamTest : public testing::DaemonSuite<ClientStreamTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(kImages, 3, 5, 40, 90); }

  void SetUp() override {
    daemon_ =
        std::make_unique<testing::DaemonProcess>(dir_->path() + "/d-" + std::to_string(::getpid()) + ".sock",
                                                 std::vector<std::string>{"--max-workers", "16"});
  }

  static LoaderOptions options(std::uint32_t rank = 0, std::uint32_t world = 1) {
    LoaderOptions o = stream_options(1, 4);
    o.seed = 3;
    o.rank = rank;
    o.world_size = world;
    return o;
  }

  std::unique_ptr<Client> connect(const LoaderOptions& o, std::string_view state = {}) {
    auto client = Client::connect(daemon_->socket(), o, state);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  static std::unique_ptr<Loader> open_loader(const LoaderOptions& o) {
    auto loader = Loader::open(o);
    EXPECT_TRUE(loader.ok()) << loader.status().message();
    return loader.ok() ? std::move(loader).value() : nullptr;
  }

  std::unique_ptr<testing::DaemonProcess> daemon_;
};

// Ranks 0..3 of world size 4, all connected at once and read in turns: each rank's pass
// is, batch for batch and pixel for pixel, the pass of a Loader of that rank, and the
// ranks together cover the dataset.
TEST_F(ClientStreamTest, FourRanksAtOnceEachGetTheirShareExactlyOnce) {
  testing::HangGuard guard(60, "ClientStreamTest.FourRanks");
  constexpr std::uint32_t kWorld = 4;
  constexpr std::uint64_t kEpochs = 2;
  std::vector<std::unique_ptr<Client>> clients;
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    clients.push_back(connect(options(r, kWorld)));
    ASSERT_TRUE(clients.back());
  }
  std::vector<Batches> got(kWorld);  // per rank, both epochs
  for (std::uint64_t epoch = 0; epoch < kEpochs; ++epoch) {
    std::vector<bool> done(kWorld, false);
    for (std::size_t finished = 0; finished < kWorld;) {  // round robin, one batch at a time
      for (std::uint32_t r = 0; r < kWorld; ++r) {
        if (done[r]) continue;
        auto next = clients[r]->next();
        ASSERT_TRUE(next.ok()) << next.status().message();
        if (next->has_value()) {
          got[r].emplace_back(**next);
        } else {
          done[r] = true;
          ++finished;
        }
      }
    }
  }
  std::vector<std::set<std::uint64_t>> covered(kEpochs);
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto loader = open_loader(options(r, kWorld));
    ASSERT_TRUE(loader);
    Batches expected = testing::read_pass(*loader);
    const Batches second = testing::read_pass(*loader);
    expected.insert(expected.end(), second.begin(), second.end());
    EXPECT_EQ(testing::first_difference(got[r], expected), "");
    for (std::uint64_t epoch = 0; epoch < kEpochs; ++epoch) {
      std::vector<std::uint64_t> indices;
      for (const BatchRecord& b : got[r]) {
        if (b.epoch == epoch) indices.insert(indices.end(), b.indices.begin(), b.indices.end());
      }
      EXPECT_EQ(indices.size(), clients[r]->samples_per_epoch()) << "epoch " << epoch;
      EXPECT_EQ(std::set<std::uint64_t>(indices.begin(), indices.end()).size(), indices.size())
          << "a sample came twice within the rank's pass of epoch " << epoch;
      covered[epoch].insert(indices.begin(), indices.end());
    }
  }
  for (std::uint64_t epoch = 0; epoch < kEpochs; ++epoch) {
    EXPECT_EQ(covered[epoch].size(), kImages) << "the ranks together miss samples in epoch " << epoch;
  }
}

// Stop after k batches, take state(), close; a new client from that state delivers the
// rest: together, an uninterrupted run over two epochs, for every k.
TEST_F(ClientStreamTest, ResumeThroughStateEqualsAnUninterruptedRun) {
  testing::HangGuard guard(90, "ClientStreamTest.Resume");
  const LoaderOptions o = options();
  auto reference_client = connect(o);
  ASSERT_TRUE(reference_client);
  const Batches reference = testing::read_batches(*reference_client, 12);  // 6 per epoch
  reference_client.reset();
  for (std::size_t k : {5u, 6u, 11u}) {
    SCOPED_TRACE("interrupted after " + std::to_string(k) + " batches");
    std::string state;
    Batches run;
    {
      auto first = connect(o);
      ASSERT_TRUE(first);
      run = testing::read_batches(*first, k);
      state = first->state();
    }
    LoaderOptions other = o;
    other.workers = 2;  // any worker count
    auto second = connect(other, state);
    ASSERT_TRUE(second);
    const Batches rest = testing::read_batches(*second, 12 - k);
    run.insert(run.end(), rest.begin(), rest.end());
    EXPECT_EQ(testing::first_difference(run, reference), "");
  }
  // A Loader's state resumes a Client, and a Client's a Loader.
  auto loader = open_loader(o);
  ASSERT_TRUE(loader);
  Batches run = testing::read_batches(*loader, 3);
  auto client = connect(o, loader->state());
  ASSERT_TRUE(client);
  Batches rest = testing::read_batches(*client, 4);
  run.insert(run.end(), rest.begin(), rest.end());
  auto resumed = Loader::open(o, client->state());
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  rest = testing::read_batches(**resumed, 5);
  run.insert(run.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(run, reference), "");
}

// As a Loader: set_epoch and a range-for right after connecting from a state go on
// from it.
TEST_F(ClientStreamTest, SetEpochAndRangeForAfterAResumeGoOnFromIt) {
  testing::HangGuard guard(90, "ClientStreamTest.SetEpochAndRangeForAfterAResume");
  const LoaderOptions o = options();
  auto loader = open_loader(o);
  ASSERT_TRUE(loader);
  const Batches reference = testing::read_pass(*loader);  // epoch 0
  ASSERT_EQ(reference.size(), 6u);
  auto first = connect(o);
  ASSERT_TRUE(first);
  testing::read_batches(*first, 4);
  auto client = connect(o, first->state());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->set_epoch(0).ok());
  Batches rest;
  for (Batch& batch : *client) rest.emplace_back(batch);
  EXPECT_EQ(testing::first_difference(rest, Batches(reference.begin() + 4, reference.end())), "");
}

// The same random script of next(), reset(), set_epoch(), load_state(), range-fors and
// held batches on a Loader and on a Client: the same batches, ends and states.
TEST_F(ClientStreamTest, RandomScriptBehavesAsTheLoader) {
  testing::HangGuard guard(120, "ClientStreamTest.RandomScript");
  const LoaderOptions o = options();
  auto loader = open_loader(o);
  auto client = connect(o);
  ASSERT_TRUE(loader && client);
  std::mt19937 rng(77);
  std::vector<std::string> states = {loader->state()};
  std::vector<std::pair<Batch, Batch>> held;
  for (int step = 0; step < 300; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const int op = static_cast<int>(rng() % 100);
    if (op < 60) {
      auto a = loader->next();
      auto b = client->next();
      ASSERT_EQ(a.ok(), b.ok());
      ASSERT_TRUE(a.ok()) << a.status().message();
      ASSERT_EQ(a->has_value(), b->has_value());
      if (a->has_value()) {
        ASSERT_TRUE(BatchRecord(**a) == BatchRecord(**b))
            << "batch differs: loader epoch " << (*a)->epoch() << " index " << (*a)->index()
            << ", client epoch " << (*b)->epoch() << " index " << (*b)->index();
        if (rng() % 4 == 0 && held.size() < 1) held.emplace_back(std::move(**a), std::move(**b));
      }
    } else if (op < 70) {
      EXPECT_TRUE(loader->reset().ok());
      ASSERT_TRUE(client->reset().ok());
    } else if (op < 78) {
      const std::uint64_t e = rng() % 3;
      EXPECT_TRUE(loader->set_epoch(e).ok());
      ASSERT_TRUE(client->set_epoch(e).ok());
    } else if (op < 86) {
      const std::string& s = states[rng() % states.size()];
      ASSERT_TRUE(loader->load_state(s).ok());
      ASSERT_TRUE(client->load_state(s).ok());
    } else if (op < 92) {
      const std::size_t stop = rng() % 8;
      Batches a, b;
      for (Batch& batch : *loader) {
        a.emplace_back(batch);
        if (a.size() == stop) break;
      }
      for (Batch& batch : *client) {
        b.emplace_back(batch);
        if (b.size() == stop) break;
      }
      ASSERT_EQ(testing::first_difference(b, a), "") << "range-for";
    } else {
      held.clear();
    }
    ASSERT_EQ(client->state(), loader->state());
    ASSERT_EQ(client->epoch(), loader->epoch());
    for (const auto& [a, b] : held) ASSERT_TRUE(BatchRecord(a) == BatchRecord(b)) << "a held batch changed";
    if (rng() % 8 == 0) states.push_back(loader->state());
  }
}

// Holding every slot: next() says so instead of waiting forever, as a Loader does;
// batches stay readable after the Client is gone.
TEST_F(ClientStreamTest, HoldingEverySlotCopiesTheOldestAsideAndBatchesOutliveTheClient) {
  testing::HangGuard guard(30, "ClientStreamTest.HoldingEverySlot");
  LoaderOptions o = options();
  o.workers = 1;
  o.prefetch = 2;  // 3 slots
  auto client = connect(o);
  ASSERT_TRUE(client);
  std::vector<Batch> held;
  for (int i = 0; i < 3; ++i) {
    auto b = client->next();
    ASSERT_TRUE(b.ok() && b->has_value()) << (b.ok() ? "end of pass" : b.status().message());
    held.push_back(std::move(**b));
  }
  const BatchRecord oldest(held[0]);
  auto fourth = client->next();  // every slot held: the oldest is copied aside, its slot given back
  ASSERT_TRUE(fourth.ok() && fourth->has_value())
      << (fourth.ok() ? "end of pass" : fourth.status().message());
  EXPECT_TRUE(BatchRecord(held[0]) == oldest) << "the copy is the batch as it was";
  auto stats = client->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->copied_batches, 1u);
  const BatchRecord before(held[1]);
  held.erase(held.begin());
  auto b = client->next();
  ASSERT_TRUE(b.ok() && b->has_value());
  held.push_back(std::move(**b));
  client.reset();
  EXPECT_TRUE(BatchRecord(held[0]) == before);
}

// A trainer that forks while it holds a Client: the child cannot use it, and its copy
// (destroyed, a batch it held released, exit() run) neither closes the parent's stream
// nor gives back the parent's slots. The parent's pass goes on, equal to a Loader's.
TEST_F(ClientStreamTest, AForkedChildCannotUseOrCloseItsParentsStream) {
  testing::HangGuard guard(60, "ClientStreamTest.AForkedChild");
  auto client = connect(options());
  ASSERT_TRUE(client);
  Batches run = testing::read_batches_with([&] { return client->next(); }, 1);
  auto held = client->next();  // held across the fork: the child's copy is released there
  ASSERT_TRUE(held.ok() && held->has_value());
  run.emplace_back(**held);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto next = client->next();
    if (next.ok() || next.status().code() != Status::Code::kFailedPrecondition) ::_exit(1);
    if (client->set_epoch(2).ok() || client->reset().ok() || client->stats().ok()) ::_exit(2);
    client->interrupt();  // must not reach the parent's waits
    held = Status::Cancelled("released in the child");
    client.reset();
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0) << "1: next() did not fail as it should; 2: another call worked";
  held = Status::Cancelled("released in the parent");
  const Batches rest = testing::read_pass_with([&] { return client->next(); });
  run.insert(run.end(), rest.begin(), rest.end());
  auto loader = open_loader(options());
  ASSERT_TRUE(loader);
  EXPECT_EQ(testing::first_difference(run, testing::read_pass(*loader)), "");
}

// With the daemon's workers stopped, next() waits for ever; interrupt() from another
// thread ends that wait at once with kCancelled, and once the workers go on the pass
// continues where it was: exactly the batches of an undisturbed Loader.
TEST_F(ClientStreamTest, InterruptEndsAWaitAndThePassGoesOn) {
  testing::HangGuard guard(30, "ClientStreamTest.Interrupt");
  LoaderOptions o = options();
  o.batch_size = 2;  // 12 batches, more than the stream's slots: some must wait
  o.prefetch = 1;
  auto client = connect(o);
  ASSERT_TRUE(client);
  const std::vector<pid_t> workers = testing::children_of(daemon_->pid());
  ASSERT_FALSE(workers.empty());
  for (pid_t pid : workers) ::kill(pid, SIGSTOP);

  using Clock = std::chrono::steady_clock;
  std::atomic<Clock::time_point::rep> sent{0};
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // next() is waiting by then
    sent = Clock::now().time_since_epoch().count();
    client->interrupt();
  });
  Batches run;
  Result<std::optional<Batch>> next = Status::Internal("not run");
  while ((next = client->next()).ok() && next->has_value()) run.emplace_back(**next);
  const auto returned = Clock::now();
  interrupter.join();
  for (pid_t pid : workers) ::kill(pid, SIGCONT);
  ASSERT_FALSE(next.ok()) << "the pass ended with the workers stopped";
  EXPECT_EQ(next.status().code(), Status::Code::kCancelled) << next.status().message();
  EXPECT_NE(next.status().message().find("Client::interrupt"), std::string::npos) << next.status().message();
  EXPECT_LT(returned - Clock::time_point(Clock::duration(sent.load())), std::chrono::seconds(1));
  EXPECT_LT(run.size(), 12u);

  const Batches rest = testing::read_pass(*client);
  run.insert(run.end(), rest.begin(), rest.end());
  auto loader = open_loader(o);
  ASSERT_TRUE(loader);
  EXPECT_EQ(testing::first_difference(run, testing::read_pass(*loader)), "");
}

TEST_F(ClientStreamTest, BadRequestsGetClearErrors) {
  LoaderOptions o = options();
  o.image_folder = dir_->path() + "/no-such-folder";
  auto missing = Client::connect(daemon_->socket(), o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-folder"), std::string::npos)
      << missing.status().message();

  StreamOptions named{options(), "imagenet"};
  named.loader.image_folder.clear();
  auto unknown = Client::connect(daemon_->socket(), named);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no dataset named 'imagenet'"), std::string::npos)
      << unknown.status().message();

  o = options();
  o.batch_size = 0;
  auto zero = Client::connect(daemon_->socket(), o);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), Status::Code::kInvalidArgument) << zero.status().message();

  auto nobody = Client::connect(dir_->path() + "/nobody.sock", options());
  ASSERT_FALSE(nobody.ok());
  EXPECT_NE(nobody.status().message().find("is it running?"), std::string::npos) << nobody.status().message();

  // A NUL in a path would cut it, and name another file: refused by the daemon too
  // (the request is JSON, which carries it), and in a socket path here.
  o = options();
  o.image_folder = root_ + std::string("\0/elsewhere", 11);
  auto nul = Client::connect(daemon_->socket(), o);
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.status().code(), Status::Code::kInvalidArgument) << nul.status().message();
  EXPECT_NE(nul.status().message().find("NUL byte at position " + std::to_string(root_.size())),
            std::string::npos)
      << nul.status().message();
  auto nul_socket = Client::connect(daemon_->socket() + std::string("\0x", 2), options());
  ASSERT_FALSE(nul_socket.ok());
  EXPECT_NE(nul_socket.status().message().find("NUL byte"), std::string::npos)
      << nul_socket.status().message();
  EXPECT_TRUE(connect(options())) << "the daemon serves on";
}

}  // namespace
}  // namespace forkfeed
