// The open_stream request's JSON: every field a client sends comes back as it was, and
// the errors name the field.
#include "protocol/stream_request.h"

#include <gtest/gtest.h>

#include "loader/order_key.h"
#include "tests/testing/fake_identity.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// A request whose every field differs from its default.
StreamRequest unusual_request() {
  StreamRequest r;
  r.stream.dataset = "imagenet";
  LoaderOptions& o = r.stream.loader;
  o.image_folder = "/data/train";
  o.manifest = "/data/train.tsv";
  o.shards = "/data/train-{000..009}.tar";
  o.shard_label = ShardLabel::kJson;
  o.shard_label_field = "class";
  o.fields = "image=jpg;png, caption=txt, label=json:label(class)";
  o.missing = MissingField::kEmpty;
  o.batch_size = 7;
  o.workers = 5;
  o.prefetch = 3;
  o.transform = "Resize(110), CenterCrop(96), RandomHorizontalFlip()";
  o.size = 96;
  o.dtype = DType::kFloat32;
  o.layout = Layout::kNhwc;
  o.mean = {0.5f, 0.25f, 0.125f};
  o.std = {0.75f, 0.5f, 2.0f};
  o.seed = std::uint64_t{1} << 63;
  o.epoch = 11;
  o.rank = 2;
  o.world_size = 4;
  o.shuffle = false;
  o.drop_last = true;
  o.on_error = OnError::kSkip;
  o.max_worker_restarts = 1;
  o.task_timeout_ms = 1234;
  o.max_pixels = 99;
  o.max_file_bytes = 4096;
  r.state = "{\"forkfeed_state\":1}";
  r.demand = true;
  return r;
}

TEST(StreamRequestTest, EveryFieldRoundTrips) {
  const StreamRequest sent = unusual_request();
  auto got = parse_stream_request(json::parse(to_json(sent).dump()));
  ASSERT_TRUE(got.ok()) << got.status().message();
  const LoaderOptions& a = sent.stream.loader;
  const LoaderOptions& b = got->stream.loader;
  EXPECT_EQ(got->stream.dataset, sent.stream.dataset);
  EXPECT_EQ(b.image_folder, a.image_folder);
  EXPECT_EQ(b.manifest, a.manifest);
  EXPECT_EQ(b.batch_size, a.batch_size);
  EXPECT_EQ(b.workers, a.workers);
  EXPECT_EQ(b.prefetch, a.prefetch);
  EXPECT_EQ(b.transform, a.transform);
  EXPECT_EQ(b.size, a.size);
  EXPECT_EQ(b.dtype, a.dtype);
  EXPECT_EQ(b.mean, a.mean);
  EXPECT_EQ(b.std, a.std);
  EXPECT_EQ(b.seed, a.seed);
  EXPECT_EQ(b.epoch, a.epoch);
  EXPECT_EQ(b.rank, a.rank);
  EXPECT_EQ(b.world_size, a.world_size);
  EXPECT_EQ(b.shuffle, a.shuffle);
  EXPECT_EQ(b.drop_last, a.drop_last);
  EXPECT_EQ(b.on_error, a.on_error);
  EXPECT_EQ(b.max_worker_restarts, a.max_worker_restarts);
  EXPECT_EQ(b.task_timeout_ms, a.task_timeout_ms);
  EXPECT_EQ(b.max_pixels, a.max_pixels);
  EXPECT_EQ(b.max_file_bytes, a.max_file_bytes);
  EXPECT_EQ(b.layout, a.layout);
  EXPECT_EQ(b.shards, a.shards);
  EXPECT_EQ(b.shard_label, a.shard_label);
  EXPECT_EQ(b.shard_label_field, a.shard_label_field);
  EXPECT_EQ(b.fields, a.fields);
  EXPECT_EQ(b.missing, a.missing);
  EXPECT_EQ(got->state, sent.state);
  EXPECT_EQ(got->demand, sent.demand);
}

TEST(StreamRequestTest, EveryKeyWrittenIsKnownAndAbsentKeysKeepTheDefaults) {
  const json body = to_json(StreamRequest{});
  // 23; shards, shard_label, shard_label_field; layout; demand; fields, missing
  EXPECT_EQ(body.size(), 32u) << body.dump();
  for (const auto& [key, value] : body.items()) {
    EXPECT_TRUE(parse_stream_request(json{{key, value}}).ok()) << key;
  }
  auto empty = parse_stream_request(json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(to_json(*empty), body);
}

TEST(StreamRequestTest, ErrorsNameTheField) {
  auto message = [](const json& body) { return parse_stream_request(body).status().message(); };
  EXPECT_EQ(message({{"colour", 1}}),
            "bad open_stream request: unknown field 'colour'; is the client of another forkfeed version?");
  EXPECT_EQ(
      message({{"workers", -1}}),
      "bad open_stream request: workers must be an integer from 1 to 4294967295 (decode workers), got -1");
  EXPECT_EQ(message({{"shuffle", 1}}), "bad open_stream request: shuffle must be true or false");
  EXPECT_EQ(message({{"mean", {1, 2}}}), "bad open_stream request: mean must be an array of 3 numbers");
  EXPECT_EQ(message({{"dtype", 8}}), "bad open_stream request: dtype must be a string");
  EXPECT_EQ(message({{"on_error", "retry"}}),
            "bad open_stream request: unknown on_error 'retry'; use fail or skip");
  // A field of the wrong type is reported before a name no enum value has.
  EXPECT_EQ(
      message({{"dtype", "int4"}, {"size", "big"}}),
      "bad open_stream request: size must be 0 (the transform's) or an integer from 8 to 4096 (pixels), got "
      "\"big\"");
  EXPECT_EQ(message({{"dtype", "int4"}, {"on_error", "retry"}}),
            "bad open_stream request: unknown dtype 'int4'; use uint8 or float32");
  // An empty name is the default, as an absent key.
  auto empty = parse_stream_request({{"dtype", ""}});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->stream.loader.dtype, LoaderOptions{}.dtype);
  // The transform is text, read at open (Loader::open names a bad op): any string parses.
  auto text = parse_stream_request({{"transform", "crop"}});
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->stream.loader.transform, "crop");
}

// A path need not be UTF-8, which a JSON string must be: it travels as its bytes, through
// a dump and a parse, and comes back the same; a malformed bytes form names the field.
TEST(StreamRequestTest, PathsThatAreNotUtf8RoundTripAsBytes) {
  StreamRequest r;
  r.stream.loader.image_folder = "/data/caf\xe9/\xff\xfe";
  r.stream.loader.manifest = "/plain/utf-8/caf\xc3\xa9.tsv";
  const json body = json::parse(to_json(r).dump());
  EXPECT_TRUE(body["image_folder"].is_object()) << body.dump();
  EXPECT_TRUE(body["manifest"].is_string()) << body.dump();
  auto back = parse_stream_request(body);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->stream.loader.image_folder, r.stream.loader.image_folder);
  EXPECT_EQ(back->stream.loader.manifest, r.stream.loader.manifest);
  auto message = [](const json& b) { return parse_stream_request(b).status().message(); };
  EXPECT_NE(message({{"manifest", {{"bytes", "abc"}}}}).find("manifest must be a string"), std::string::npos);
  EXPECT_NE(message({{"manifest", {{"bytes", "ZZ"}}}}).find("lowercase hex digits"), std::string::npos);
}

OrderKey unusual_key() {
  return OrderKey{testing::fake_identity(12345, 'd'), std::uint64_t{1} << 63, 3, 8, 16, false, true};
}

// forkfeedd's reply and a saved state share one codec: each shape reads back what it wrote.
TEST(StreamRequestTest, OrderKeyRoundTripsInTheReplyAndInAState) {
  const OrderKey key = unusual_key();
  auto from_reply = parse_order_key(json::parse(to_json(key).dump()));
  ASSERT_TRUE(from_reply.ok()) << from_reply.status().message();
  EXPECT_EQ(*from_reply, key);
  auto from_state = read_order_key(json::parse(encode_checkpoint(Checkpoint{4, 2, key})), "order");
  ASSERT_TRUE(from_state.ok()) << from_state.status().message();
  OrderKey stored = key;
  stored.dataset.legacy.clear();  // for a Client to check version-1 states: the reply's only
  EXPECT_EQ(*from_state, stored);
}

TEST(StreamRequestTest, MalformedOrderKeyNamesTheField) {
  json body = to_json(unusual_key());
  body.erase("rank");
  EXPECT_EQ(parse_order_key(body).status().message(),
            "forkfeedd sent a malformed order key: missing field \"rank\"; is it another forkfeed version?");
  body = to_json(unusual_key());
  body["dataset"].erase("legacy");
  EXPECT_EQ(parse_order_key(body).status().message(),
            "forkfeedd sent a malformed order key: missing field \"dataset.legacy\"; is it another forkfeed "
            "version?");
  EXPECT_EQ(parse_order_key(body).status().code(), Status::Code::kInternal);
}

StreamOpened an_opened_stream() {
  StreamOpened o;
  o.stream = 7;
  o.generation = 3;
  o.epoch = 5;
  o.position = 2;
  o.batches_per_epoch = 9;
  o.samples_per_epoch = 70;
  o.slots = 5;
  o.workers = 2;
  o.classes = 1000;
  o.size = 96;
  o.dtype = DType::kFloat32;
  o.layout = Layout::kNhwc;
  o.arena_bytes = 1u << 20;
  o.order.dataset = testing::fake_identity(140, 'c');
  o.order.rank = 1;
  o.order.world_size = 2;
  o.order.batch_size = 8;
  return o;
}

TEST(StreamRequestTest, TheOpenStreamReplyRoundTrips) {
  const StreamOpened sent = an_opened_stream();
  auto got = parse_stream_opened(to_json(sent));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(to_json(*got), to_json(sent));
  EXPECT_EQ(got->order, sent.order);
  EXPECT_EQ(got->dtype, DType::kFloat32);
  EXPECT_EQ(got->layout, Layout::kNhwc);
}

TEST(StreamRequestTest, AMalformedOpenStreamReplyNamesTheFieldAndAnOldOneMayLeaveOutClasses) {
  json reply = to_json(an_opened_stream());
  reply.erase("classes");
  auto old = parse_stream_opened(reply);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->classes, 0u);
  for (const char* field : {"generation", "slots", "dtype", "order"}) {
    json bad = to_json(an_opened_stream());
    bad[field] = field == std::string("slots") ? json(std::uint64_t{1} << 40) : json("?");
    const auto parsed = parse_stream_opened(bad);
    ASSERT_FALSE(parsed.ok()) << field;
    EXPECT_EQ(parsed.status().code(), Status::Code::kInternal);
    EXPECT_NE(parsed.status().message().find(field == std::string("order") ? "order" : field),
              std::string::npos)
        << parsed.status().message();
  }
}

}  // namespace
}  // namespace forkfeed
