// HDF5 attributes: text that looks like a number stays text when asked.
#include "helpers.hpp"
#include "mft/layout/h5.hpp"

using namespace mft;

TEST(H5, ChecksumTextThatLooksNumericStaysText) {
  const std::string path = "test_h5_attributes.h5";
  h5::File f;
  ASSERT_EQ(h5::Open(PETSC_COMM_WORLD, path, true, &f), 0);
  // A checksum whose hex digits read as a float (45422455e2043959), or as an integer.
  h5::WriteAttribute(f, "checksum", "45422455e2043959", true);
  h5::WriteAttribute(f, "digits", "0123456789012345", true);
  h5::WriteAttribute(f, "number", "0.25");
  ASSERT_EQ(h5::Close(&f), 0);
  ASSERT_EQ(h5::Open(PETSC_COMM_WORLD, path, false, &f), 0);
  std::string v;
  ASSERT_TRUE(h5::ReadAttribute(f, "checksum", &v));
  EXPECT_EQ(v, "45422455e2043959");
  ASSERT_TRUE(h5::ReadAttribute(f, "digits", &v));
  EXPECT_EQ(v, "0123456789012345");
  ASSERT_TRUE(h5::ReadAttribute(f, "number", &v));
  EXPECT_EQ(v, "0.25");
  ASSERT_EQ(h5::Close(&f), 0);
}
