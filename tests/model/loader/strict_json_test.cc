// Tests for ParseJsonStrict: duplicate keys, nesting limit, error positions, no exceptions.
#include "model/loader/strict_json.h"

#include <random>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace transerve {
namespace {

using ::testing::HasSubstr;

TEST(StrictJson, ParsesLikeNlohmann) {
  const std::string text =
      R"( {"a": [1, -2, 3.5, true, null, "x\u00e9"], "b": {"c": {}}, "d": 18446744073709551615} )";
  absl::StatusOr<nlohmann::json> parsed = ParseJsonStrict(text, "t.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, nlohmann::json::parse(text));
  EXPECT_TRUE((*parsed)["d"].is_number_unsigned());
}

TEST(StrictJson, ScalarsAndEmptyContainersAtTopLevel) {
  EXPECT_EQ(*ParseJsonStrict("3", "t"), nlohmann::json(3));
  EXPECT_EQ(*ParseJsonStrict("[]", "t"), nlohmann::json::array());
  EXPECT_EQ(*ParseJsonStrict("{}", "t"), nlohmann::json::object());
  EXPECT_EQ(*ParseJsonStrict("null", "t"), nlohmann::json());
}

TEST(StrictJson, RejectsDuplicateKeysWithTheirPath) {
  struct Case {
    const char* text;
    const char* fragment;
  };
  for (const Case& c : {
           Case{R"({"a":1,"a":2})", "duplicate key \"a\" in the object at / (top level)"},
           Case{R"({"x":{"k":1,"k":1}})", "duplicate key \"k\" in the object at /x"},
           Case{R"({"x":[{"k":1},{"k":1,"k":2}]})", "duplicate key \"k\" in the object at /x/1"},
           Case{R"({"a":1,"\u0061":2})", "duplicate key \"a\""},
       }) {
    absl::StatusOr<nlohmann::json> parsed = ParseJsonStrict(c.text, "dup.json");
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("dup.json"));
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.fragment));
  }
  // Same key in different objects is fine.
  EXPECT_TRUE(ParseJsonStrict(R"({"a":{"k":1},"b":{"k":1}})", "t").ok());
}

TEST(StrictJson, ReportsLineAndColumn) {
  absl::StatusOr<nlohmann::json> parsed = ParseJsonStrict("{\n  \"a\": 1,\n  \"b\" 2\n}", "p.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("p.json: invalid JSON at line 3, column 7"));
  parsed = ParseJsonStrict("", "e.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("e.json: invalid JSON"));
}

TEST(StrictJson, RejectsTrailingTextAndComments) {
  EXPECT_FALSE(ParseJsonStrict("{} {}", "t").ok());
  EXPECT_FALSE(ParseJsonStrict("{} // c", "t").ok());
  EXPECT_TRUE(ParseJsonStrict("{}  \n\t\r", "t").ok());
}

TEST(StrictJson, NumberOverflowIsAnErrorNotAnException) {
  EXPECT_FALSE(ParseJsonStrict("[1e999]", "t").ok());
}

TEST(StrictJson, LimitsNesting) {
  std::string ok_text = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(ParseJsonStrict(ok_text, "t").ok());
  std::string deep = std::string(65, '[') + std::string(65, ']');
  absl::StatusOr<nlohmann::json> parsed = ParseJsonStrict(deep, "deep.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("nesting deeper than 64"));
  std::string huge = std::string(1000000, '{');
  EXPECT_FALSE(ParseJsonStrict(huge, "t").ok());
}

TEST(StrictJson, InvalidUtf8InStringsIsRejected) {
  EXPECT_FALSE(ParseJsonStrict("[\"\xff\"]", "t").ok());
  EXPECT_FALSE(ParseJsonStrict(R"(["\ud800"])", "t").ok());  // Lone surrogate escape.
}

TEST(StrictJson, RandomGarbageNeverThrows) {
  std::mt19937 rng(5);
  const std::string alphabet = "{}[]\":,-0123456789.eE tfnrule\\\x80\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    absl::StatusOr<nlohmann::json> parsed = ParseJsonStrict(text, "g");
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(StrictJson, DescribesValues) {
  EXPECT_EQ(DescribeJsonValue(nlohmann::json("512")), "string \"512\"");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json(3)), "integer 3");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json(2.5)), "number 2.5");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json(true)), "boolean true");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json()), "null");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json::array()), "an array");
  EXPECT_EQ(DescribeJsonValue(nlohmann::json::object()), "an object");
}

TEST(StrictJson, MissingFileIsNotFound) {
  absl::StatusOr<nlohmann::json> parsed = ReadJsonFileStrict("/nonexistent/dir/x.json");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("/nonexistent/dir/x.json"));
}

}  // namespace
}  // namespace transerve
