// The transform option of a schema with several image fields: one pipeline for all, or a
// named section for each, and every mistake named.
#include "plan/field_transforms.h"
#include "plan/image_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace forkfeed {
namespace {

const std::vector<std::string> kViews = {"image", "view2"};

std::string error_of(std::string_view transform) {
  auto split = pipelines_by_field(transform, kViews);
  return split.ok() ? "" : split.status().message();
}

TEST(FieldTransforms, OnePipelineIsEveryImageFields) {
  auto split = pipelines_by_field(" RandomResizedCrop(96), RandomHorizontalFlip() ", kViews);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(*split, (std::vector<std::string>{"RandomResizedCrop(96), RandomHorizontalFlip()",
                                              "RandomResizedCrop(96), RandomHorizontalFlip()"}));
}

TEST(FieldTransforms, NamedSectionsGoToTheirFieldsInTheSchemasOrder) {
  auto split = pipelines_by_field("view2: RandomResizedCrop(96);image: eval ;", kViews);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(*split, (std::vector<std::string>{"eval", "RandomResizedCrop(96)"}));
}

TEST(FieldTransforms, MistakesAreNamed) {
  EXPECT_NE(error_of("image: eval").find("gives image field 'view2' no pipeline"), std::string::npos);
  EXPECT_NE(error_of("image: eval; caption: train").find("field 'caption', which is no image field"),
            std::string::npos);
  EXPECT_NE(error_of("image: eval; image: train; view2: eval").find("names field 'image' twice"),
            std::string::npos);
  EXPECT_NE(error_of("eval; view2: eval").find("section \"eval\" names no field"), std::string::npos);
}

// A schema of text and arrays alone has nothing for the workers to decode: refused, naming it.
TEST(FieldTransforms, ASchemaWithoutAnImageFieldIsRefused) {
  LoaderOptions o;
  o.fields = "caption=txt, label=cls";
  auto pipelines = plan_images(o, parse_fields(o.fields).value());
  ASSERT_FALSE(pipelines.ok());
  EXPECT_EQ(pipelines.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(pipelines.status().message().find("fields \"caption=txt, label=cls\" has no image field"),
            std::string::npos)
      << pipelines.status().message();
  o.fields = "caption=txt, image=png";
  auto planned = plan_images(o, parse_fields(o.fields).value());
  ASSERT_TRUE(planned.ok()) << planned.status().message();
}

}  // namespace
}  // namespace forkfeed
