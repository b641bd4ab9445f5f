// Listener: forkfeedd's socket file is private unless others are allowed; a file left by
// a daemon that is gone is replaced, a live daemon's is not stolen, and on close only the
// file this Listener made is removed. accept() names the peer's pid and uid.
#include "daemon/listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

class ListenerTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name = "d") const { return dir_.path() + "/" + name + ".sock"; }

  // The file at `p`: its inode, or 0 if there is none.
  static ino_t inode_of(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  static mode_t mode_of(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode;
  }

  // Waits (generously) until `listener` has a connection to accept, then accepts it.
  static Listener::Peer accept_one(Listener& listener) {
    pollfd p{listener.fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 30000), 1) << "no connection arrived";
    auto peer = listener.accept();
    EXPECT_TRUE(peer.ok()) << peer.status().message();
    return peer.ok() ? std::move(peer).value() : Listener::Peer{};
  }

  // A socket file at `p` that nobody listens on: bound, then closed without a listen().
  static void leave_dead_socket_file(const std::string& p) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, p.c_str(), p.size());
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0)
        << std::strerror(errno);
  }

  testing::TempDir dir_;
};

TEST_F(ListenerTest, TheSocketFileIsTheOwnersOnly) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  EXPECT_EQ(listener->path(), path());
  const mode_t mode = mode_of(path());
  EXPECT_TRUE(S_ISSOCK(mode));
  EXPECT_EQ(mode & 0600, 0600u) << std::oct << (mode & 0777);
  EXPECT_EQ(mode & 0077, 0u) << "group or others may connect: " << std::oct << (mode & 0777);
}

TEST_F(ListenerTest, OthersAllowedMakesTheSocketFileWritableByAll) {
  auto listener = Listener::bind(path(), true);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  const mode_t mode = mode_of(path());
  EXPECT_TRUE(S_ISSOCK(mode));
  EXPECT_EQ(mode & 0666, 0666u) << "others cannot connect: " << std::oct << (mode & 0777);
}

TEST_F(ListenerTest, BindLeavesTheProcessUmaskAsItWas) {
  const mode_t before = ::umask(0022);
  for (bool others : {false, true}) {
    auto listener = Listener::bind(path(), others);
    ASSERT_TRUE(listener.ok()) << listener.status().message();
    EXPECT_EQ(::umask(0022), 0022u) << "others_allowed " << others;
  }
  ::umask(before);
}

TEST_F(ListenerTest, AcceptWithNothingWaitingGivesNoSocket) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  auto peer = listener->accept();
  ASSERT_TRUE(peer.ok()) << peer.status().message();
  EXPECT_FALSE(peer->socket.valid());
}

TEST_F(ListenerTest, AcceptNamesThePeersPidAndUid) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  UniqueFd client = testing::connect_unix(path());
  ASSERT_TRUE(client.valid()) << std::strerror(errno);
  Listener::Peer peer = accept_one(*listener);
  ASSERT_TRUE(peer.socket.valid());
  EXPECT_EQ(peer.pid, ::getpid());
  EXPECT_EQ(peer.uid, ::getuid());
  // And it is that client's connection.
  ASSERT_EQ(::send(client.get(), "hi", 2, MSG_NOSIGNAL), 2);
  char got[2];
  ASSERT_EQ(::recv(peer.socket.get(), got, 2, MSG_WAITALL), 2);
  EXPECT_EQ(std::string(got, 2), "hi");
}

TEST_F(ListenerTest, TheSocketOfADaemonThatDiedIsReplaced) {
  // A daemon that crashed: it bound and listened, then its process went without close().
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto crashed = Listener::bind(path(), false);
    ::_exit(crashed.ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the first daemon could not bind";
  ASSERT_NE(inode_of(path()), 0u) << "the crashed daemon left no file to replace";
  ASSERT_FALSE(testing::connectable(path()));

  // (Its inode number may well come back for the new file: only a connection tells.)
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  UniqueFd client = testing::connect_unix(path());
  ASSERT_TRUE(client.valid()) << std::strerror(errno);
  EXPECT_TRUE(accept_one(*listener).socket.valid());
}

TEST_F(ListenerTest, ASocketFileNobodyListensOnIsReplaced) {
  leave_dead_socket_file(path());
  ASSERT_NE(inode_of(path()), 0u);
  ASSERT_FALSE(testing::connectable(path()));
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  UniqueFd client = testing::connect_unix(path());
  ASSERT_TRUE(client.valid()) << std::strerror(errno);
  EXPECT_TRUE(accept_one(*listener).socket.valid());
}

TEST_F(ListenerTest, ALiveDaemonsSocketIsNotStolen) {
  auto first = Listener::bind(path(), false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const ino_t inode = inode_of(path());
  auto second = Listener::bind(path(), false);
  ASSERT_FALSE(second.ok()) << "a second listener took a live daemon's socket";
  EXPECT_NE(second.status().message().find(path()), std::string::npos) << second.status().message();
  EXPECT_NE(second.status().message().find("another forkfeedd"), std::string::npos)
      << second.status().message();
  EXPECT_EQ(inode_of(path()), inode) << "the live daemon's file was replaced";
  // The first still serves; the probe connection of the second is simply accepted and dropped.
  UniqueFd client = testing::connect_unix(path());
  ASSERT_TRUE(client.valid()) << std::strerror(errno);
  EXPECT_TRUE(accept_one(*first).socket.valid());
}

TEST_F(ListenerTest, AFileThatIsNotASocketIsLeftAlone) {
  { std::ofstream(path()) << "precious"; }
  auto listener = Listener::bind(path(), false);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.status().message().find("is not a socket"), std::string::npos)
      << listener.status().message();
  std::ifstream in(path());
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
}

TEST_F(ListenerTest, CloseRemovesItsOwnFile) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  listener->close();
  EXPECT_EQ(inode_of(path()), 0u) << "the socket file is still there";
  EXPECT_FALSE(testing::connectable(path()));
  listener->close();  // twice: nothing more
}

TEST_F(ListenerTest, TheDestructorRemovesTheFile) {
  {
    auto listener = Listener::bind(path(), false);
    ASSERT_TRUE(listener.ok()) << listener.status().message();
    Listener moved = std::move(listener).value();
    EXPECT_EQ(moved.path(), path());
  }
  EXPECT_EQ(inode_of(path()), 0u) << "the socket file is still there";
}

TEST_F(ListenerTest, CloseLeavesAFileThatReplacedItsOwn) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  // Another daemon (or anyone) put its own file there meanwhile.
  ASSERT_EQ(::unlink(path().c_str()), 0);
  auto other = Listener::bind(path(), false);
  ASSERT_TRUE(other.ok()) << other.status().message();
  const ino_t others = inode_of(path());
  listener->close();
  EXPECT_EQ(inode_of(path()), others) << "close() removed a file it did not make";
  UniqueFd client = testing::connect_unix(path());
  ASSERT_TRUE(client.valid()) << "the other listener lost its socket";
}

TEST_F(ListenerTest, CloseLeavesAPlainFileThatReplacedItsSocket) {
  auto listener = Listener::bind(path(), false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  ASSERT_EQ(::unlink(path().c_str()), 0);
  { std::ofstream(path()) << "other"; }
  listener->close();
  EXPECT_NE(inode_of(path()), 0u) << "close() removed a file it did not make";
}

TEST_F(ListenerTest, APathTooLongForSunPathIsAClearError) {
  const std::size_t max = sizeof(sockaddr_un{}.sun_path) - 1;
  const std::string too_long = dir_.path() + "/" + std::string(max, 'x') + ".sock";
  auto listener = Listener::bind(too_long, false);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), Status::Code::kInvalidArgument);
  const std::string& message = listener.status().message();
  EXPECT_NE(message.find("longer than " + std::to_string(max) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("--socket"), std::string::npos) << "it does not say what to change: " << message;

  auto empty = Listener::bind("", false);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace forkfeed
