/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The persistent Python kernel behind MCP's run_python, as two small Python programs run
 * inside the sandbox through an ordinary exec (nothing new in the agent, nothing parsed here):
 *
 *   python3 -c MCP_KERNEL_CLIENT MCP_KERNEL_SERVER <code>
 *
 * The client connects to /tmp/.sbx-kernel-<uid>.sock (starting the server in its own session
 * when nobody listens), passes its stdin/stdout/stderr with SCM_RIGHTS and the code, and
 * exits with the status the server sends back. The server runs each cell in one persistent
 * globals dict with the client's fds as 0/1/2 (so subprocess output lands there too), prints
 * the repr of a trailing expression, prints a traceback on an exception (status 1), and
 * interrupts a cell (KeyboardInterrupt) whose client went away, e.g. killed by the exec
 * timeout. The kernel dies with the sandbox.
 */
#pragma once

#define MCP_KERNEL_CLIENT                                                                          \
        "import os,sys,socket,struct,time,subprocess\n"                                            \
        "P='/tmp/.sbx-kernel-%d.sock'%os.getuid()\n"                                               \
        "def conn():\n"                                                                            \
        "    c=socket.socket(socket.AF_UNIX);c.connect(P);return c\n"                              \
        "try:\n"                                                                                   \
        "    c=conn()\n"                                                                           \
        "except OSError:\n"                                                                        \
        "    c=None\n"                                                                             \
        "    subprocess.Popen([sys.executable,'-c',sys.argv[1],P],stdin=subprocess.DEVNULL,"       \
        "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,start_new_session=True)\n"            \
        "    for i in range(400):\n"                                                               \
        "        time.sleep(0.025)\n"                                                              \
        "        try:\n"                                                                           \
        "            c=conn();break\n"                                                             \
        "        except OSError:\n"                                                                \
        "            pass\n"                                                                       \
        "if c is None:\n"                                                                          \
        "    sys.stderr.write('sbx: the Python kernel did not start\\n');sys.exit(125)\n"          \
        "code=sys.argv[2].encode()\n"                                                              \
        "socket.send_fds(c,[struct.pack('!Q',len(code))],[0,1,2])\n"                               \
        "c.sendall(code)\n"                                                                        \
        "st=c.recv(1)\n"                                                                           \
        "sys.exit(st[0] if st else 1)\n"

#define MCP_KERNEL_SERVER                                                                          \
        "import os,sys,socket,ast,traceback,threading,_thread,struct,select\n"                     \
        "P=sys.argv[1]\n"                                                                          \
        "try:\n"                                                                                   \
        "    os.unlink(P)\n"                                                                       \
        "except OSError:\n"                                                                        \
        "    pass\n"                                                                               \
        "s=socket.socket(socket.AF_UNIX);s.bind(P);os.chmod(P,0o600);s.listen(8)\n"                \
        "G={'__name__':'__main__','__builtins__':__builtins__}\n"                                  \
        "def watch(c,done):\n"                                                                     \
        "    while not done.is_set():\n"                                                           \
        "        r,_,_=select.select([c],[],[],0.2)\n"                                             \
        "        if r and not done.is_set():\n"                                                    \
        "            _thread.interrupt_main();return\n"                                            \
        "def run(code):\n"                                                                         \
        "    t=ast.parse(code,'<cell>','exec');last=None\n"                                        \
        "    if t.body and isinstance(t.body[-1],ast.Expr):\n"                                     \
        "        last=ast.Expression(t.body.pop().value)\n"                                        \
        "    exec(compile(t,'<cell>','exec'),G)\n"                                                 \
        "    if last is not None:\n"                                                               \
        "        v=eval(compile(last,'<cell>','eval'),G)\n"                                        \
        "        if v is not None:\n"                                                              \
        "            print(repr(v))\n"                                                             \
        "def serve(c):\n"                                                                          \
        "    msg,fds,_,_=socket.recv_fds(c,16,3)\n"                                                \
        "    n=struct.unpack('!Q',msg[:8])[0];data=msg[8:]\n"                                      \
        "    while len(data)<n:\n"                                                                 \
        "        b=c.recv(n-len(data))\n"                                                          \
        "        if not b:\n"                                                                      \
        "            return\n"                                                                     \
        "        data+=b\n"                                                                        \
        "    saved=[os.dup(i) for i in range(3)]\n"                                                \
        "    for i,f in enumerate(fds):\n"                                                         \
        "        os.dup2(f,i);os.close(f)\n"                                                       \
        "    st=0;done=threading.Event()\n"                                                        \
        "    threading.Thread(target=watch,args=(c,done),daemon=True).start()\n"                   \
        "    try:\n"                                                                               \
        "        run(data.decode('utf-8','replace'))\n"                                            \
        "    except SystemExit as e:\n"                                                            \
        "        st=e.code if isinstance(e.code,int) else (0 if e.code is None else 1)\n"          \
        "    except KeyboardInterrupt:\n"                                                          \
        "        st=130;traceback.print_exc()\n"                                                   \
        "    except BaseException:\n"                                                              \
        "        st=1;traceback.print_exc()\n"                                                     \
        "    finally:\n"                                                                           \
        "        done.set()\n"                                                                     \
        "        for f in (sys.stdout,sys.stderr):\n"                                              \
        "            try:\n"                                                                       \
        "                f.flush()\n"                                                              \
        "            except Exception:\n"                                                          \
        "                pass\n"                                                                   \
        "        for i in range(3):\n"                                                             \
        "            os.dup2(saved[i],i);os.close(saved[i])\n"                                     \
        "    c.sendall(bytes([st&255]))\n"                                                         \
        "while True:\n"                                                                            \
        "    try:\n"                                                                               \
        "        c,_=s.accept()\n"                                                                 \
        "        try:\n"                                                                           \
        "            serve(c)\n"                                                                   \
        "        finally:\n"                                                                       \
        "            c.close()\n"                                                                  \
        "    except BaseException:\n"                                                              \
        "        pass\n"
