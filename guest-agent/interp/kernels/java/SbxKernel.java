// SPDX-License-Identifier: Apache-2.0
//
// sbx Java kernel: one JShell (the JDK's own REPL engine, jdk.jshell) per context, driven by
// sbx-agent over a unix socket with the line protocol of the other kernels
// (guest-agent/interp/README.md):
//   agent -> kernel  {"code", "env"?, "genv"?}
//   kernel -> agent  Y (ready) | R<json> (forwarded verbatim) | D (done)
// Snippets run in this JVM (a DirectExecutionControl), each on a fresh thread, so that SIGINT
// can interrupt one (Thread.interrupt, then Thread.stop) and the shell's state survives.
// System.out and System.err are the kernel's own streams: every write they make is one stdout or
// stderr line on the socket, as IJava (E2B's Java kernel) sends one message per write, so that
// println's text and its line end are two messages there too. Subprocesses write to fd 1 and
// fd 2, pipes the agent reads and timestamps.
// Compiled by templates/code-interpreter-v1/layer.sh (javac); run as
//   java --add-opens java.base/java.util=ALL-UNNAMED -cp <dir> SbxKernel

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;
import jdk.jshell.execution.DirectExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;
import sun.misc.Signal;

public final class SbxKernel {
    /* What jshell's DEFAULT startup imports (the JShell API applies none by itself). */
    private static final String IMPORTS = "import java.io.*; import java.math.*; import java.net.*;"
            + " import java.nio.file.*; import java.util.*; import java.util.concurrent.*;"
            + " import java.util.function.*; import java.util.prefs.*; import java.util.regex.*;"
            + " import java.util.stream.*;";
    /* How long SIGINT waits for Thread.interrupt() to end a snippet before Thread.stop(). */
    private static final long STOP_AFTER_MS = 200;

    private final SocketChannel sock;
    private final Exec exec = new Exec();
    private final JShell shell;
    private final SourceCodeAnalysis analysis;
    private final Env env = new Env();
    private final ByteBuffer rbuf = ByteBuffer.allocate(64 * 1024);
    private byte[] line = new byte[64 * 1024];
    private int lineLen;

    private SbxKernel(SocketChannel sock) {
        this.sock = sock;
        this.shell = JShell.builder().executionEngine(new Provider(exec), new HashMap<>()).build();
        this.analysis = shell.sourceCodeAnalysis();
    }

    // ---- wire ----

    /* System.out and System.err need no flush first: every print reaches send() at once (and
     * flushing them here, under this lock, could deadlock with a thread printing). */
    private synchronized void send(String s) throws IOException {
        ByteBuffer b = ByteBuffer.wrap((s + "\n").getBytes(StandardCharsets.UTF_8));
        while (b.hasRemaining())
            sock.write(b);
    }

    /* One request line, or null at end of file. */
    private String readLine() throws IOException {
        for (;;) {
            rbuf.flip();
            while (rbuf.hasRemaining()) {
                byte c = rbuf.get();
                if (c == '\n') {
                    String s = new String(line, 0, lineLen, StandardCharsets.UTF_8);
                    lineLen = 0;
                    rbuf.compact();
                    return s;
                }
                if (lineLen == line.length)
                    line = Arrays.copyOf(line, line.length * 2);
                line[lineLen++] = c;
            }
            rbuf.clear();
            if (sock.read(rbuf) < 0)
                return null;
        }
    }

    // ---- execution ----

    /* The outcome of one cell: a main result (text), an error line, or neither. */
    private static final class Outcome {
        String result;
        Map<String, Object> error;
    }

    private Outcome execute(String code) {
        Outcome o = new Outcome();
        String rest = code;
        exec.begin();
        try {
            for (;;) {
                SourceCodeAnalysis.CompletionInfo ci = analysis.analyzeCompletion(rest);
                SourceCodeAnalysis.Completeness c = ci.completeness();
                if (c == SourceCodeAnalysis.Completeness.EMPTY)
                    break;
                // Incomplete or invalid input is handed to the compiler whole: its
                // diagnostics say what is wrong.
                String src = c.isComplete() ? ci.source() : rest;
                o.result = null;
                if (exec.interrupted() || !evalOne(src, o))
                    break;
                if (!c.isComplete())
                    break;
                rest = ci.remaining();
            }
        } finally {
            exec.end();
        }
        if (exec.interrupted()) {
            o.result = null;
            o.error = errorLine("ExecutionAborted", "Execution was aborted", "");
        }
        return o;
    }

    /* Evaluate one snippet. false when it failed (o.error set). */
    private boolean evalOne(String src, Outcome o) {
        exec.clearLast();
        List<SnippetEvent> events = shell.eval(src);
        for (SnippetEvent ev : events) {
            if (ev.causeSnippet() != null)
                continue; // an update of an earlier snippet, not this one
            JShellException ex = ev.exception();
            if (ex != null) {
                o.error = exceptionLine(ex);
                return false;
            }
            if (!ev.status().isDefined()) {
                o.error = compileError(ev.snippet());
                return false;
            }
            switch (ev.snippet().subKind()) {
            case TEMP_VAR_EXPRESSION_SUBKIND:
                // An expression's value lands in a temporary ($1, $2, ...). Every live snippet
                // is imported into the wrapper of each later one, so keeping them all makes
                // each cell slower than the last (measured: 10 ms a cell stays 10 ms when they
                // are dropped, grows to 75 ms after 600 kept). The value is shown; $N is gone.
                if (exec.hasLast() && exec.last() != null)
                    o.result = render(exec.last());
                shell.drop(ev.snippet());
                break;
            case VAR_VALUE_SUBKIND:
            case OTHER_EXPRESSION_SUBKIND:
                if (exec.hasLast() && exec.last() != null)
                    o.result = render(exec.last());
                break;
            default:
                break;
            }
        }
        return true;
    }

    private static String render(Object v) {
        if (v.getClass().isArray()) {
            String s = Arrays.deepToString(new Object[] {v});
            return s.substring(1, s.length() - 1);
        }
        try {
            return String.valueOf(v);
        } catch (Throwable t) { // a user toString() that throws
            return v.getClass().getName() + "@" + Integer.toHexString(System.identityHashCode(v));
        }
    }

    private Map<String, Object> compileError(Snippet sn) {
        StringBuilder tb = new StringBuilder();
        String first = null;
        String src = sn.source();
        for (Diag d : (Iterable<Diag>) shell.diagnostics(sn)::iterator) {
            if (!d.isError())
                continue;
            // The wrapper class jshell compiles a snippet in has no name worth showing.
            String msg = d.getMessage(Locale.ROOT).replaceAll("\n\\s*location: class\\s*$", "");
            if (first == null)
                first = msg;
            tb.append(msg).append('\n').append(sourceMark(src, d)).append('\n');
        }
        if (first == null) {
            List<String> deps = new ArrayList<>();
            if (sn instanceof jdk.jshell.DeclarationSnippet)
                shell.unresolvedDependencies((jdk.jshell.DeclarationSnippet) sn).forEach(deps::add);
            first = deps.isEmpty() ? "the snippet was not accepted"
                                   : "cannot find symbol: " + String.join(", ", deps);
            tb.append(first).append('\n');
        }
        return errorLine("CompilationException", first, tb.toString());
    }

    /* The source line of a diagnostic with a caret under its start. */
    private static String sourceMark(String src, Diag d) {
        int pos = (int) Math.max(0, Math.min(d.getStartPosition(), src.length()));
        int ls = src.lastIndexOf('\n', pos - 1) + 1;
        int le = src.indexOf('\n', pos);
        if (le < 0)
            le = src.length();
        return src.substring(ls, le) + "\n" + " ".repeat(pos - ls) + "^";
    }

    private static Map<String, Object> exceptionLine(JShellException ex) {
        String name;
        if (ex instanceof EvalException)
            name = ((EvalException) ex).getExceptionClassName();
        else if (ex instanceof UnresolvedReferenceException)
            name = "UnresolvedReferenceException";
        else
            name = ex.getClass().getName();
        String value = ex.getMessage() == null ? "" : ex.getMessage();
        if (ex instanceof UnresolvedReferenceException)
            value = "attempted to use " + ((UnresolvedReferenceException) ex).getSnippet().source().strip()
                    + " which cannot be used until its dependencies are declared";
        StringBuilder tb = new StringBuilder(name);
        if (!value.isEmpty())
            tb.append(": ").append(value);
        tb.append('\n');
        for (StackTraceElement f : ex.getStackTrace()) {
            // The cell's frames: jshell names their files "#<snippet id>".
            if (f.getFileName() == null || !f.getFileName().startsWith("#"))
                continue;
            tb.append("\tat ").append(f.getMethodName()).append('(').append(f.getFileName())
                    .append(':').append(f.getLineNumber()).append(")\n");
        }
        return errorLine(name, value, tb.toString());
    }

    private static Map<String, Object> errorLine(String name, String value, String tb) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "error");
        m.put("name", name);
        m.put("value", value);
        m.put("traceback", tb);
        return m;
    }

    @SuppressWarnings("unchecked")
    private void handle(Map<String, Object> req) throws IOException {
        String tail = "";
        Map<String, String> saved = new LinkedHashMap<>();
        try {
            if (req.get("genv") instanceof Map)
                env.applyGlobal((Map<String, Object>) req.get("genv"));
            if (req.get("env") instanceof Map)
                for (Map.Entry<String, Object> e : ((Map<String, Object>) req.get("env")).entrySet())
                    if (e.getValue() instanceof String) {
                        saved.putIfAbsent(e.getKey(), env.get(e.getKey()));
                        env.set(e.getKey(), (String) e.getValue());
                    }
            Object code = req.get("code");
            Outcome o = execute(code instanceof String ? (String) code : "");
            if (o.error != null) {
                tail = "R" + Json.write(o.error) + "\n";
            } else if (o.result != null) {
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("type", "result");
                r.put("text", o.result);
                r.put("is_main_result", Boolean.TRUE);
                tail = "R" + Json.write(r) + "\n";
            }
        } finally {
            for (Map.Entry<String, String> e : saved.entrySet())
                env.set(e.getKey(), e.getValue());
            send(tail + "D");
        }
    }

    @SuppressWarnings("unchecked")
    private void serve() throws IOException {
        String l;
        while ((l = readLine()) != null) {
            Object req;
            try {
                req = Json.parse(l);
            } catch (IllegalArgumentException e) {
                continue;
            }
            if (req instanceof Map)
                handle((Map<String, Object>) req);
        }
    }

    /* One output message per write, the agent's timestamp format (code-json.c). */
    private static final DateTimeFormatter STAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);

    private static final class KernelOut extends OutputStream {
        private final SbxKernel k;
        private final String type;

        KernelOut(SbxKernel k, String type) {
            this.k = k;
            this.type = type;
        }

        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            if (len == 0)
                return;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", type);
            m.put("text", new String(b, off, len, StandardCharsets.UTF_8));
            m.put("timestamp", STAMP.format(Instant.now()));
            try {
                k.send("R" + Json.write(m));
            } catch (IOException e) {
                // the agent is gone: the kernel ends when its socket does
            }
        }
    }

    /* A subclass: the JDK's PrintStream writes println's text and line end at once, any
     * subclass's as print() then newLine(), two writes (IJava's behaviour). */
    private static PrintStream kernelStream(SbxKernel k, String type) {
        return new PrintStream(new KernelOut(k, type), true, StandardCharsets.UTF_8) {};
    }

    public static void main(String[] args) throws Exception {
        String path = System.getenv("SBX_KERNEL_SOCKET");
        Env.forget("SBX_KERNEL_SOCKET");
        Env.forget("SBX_KERNEL_PRELOAD");
        SocketChannel sc = SocketChannel.open(UnixDomainSocketAddress.of(path == null ? "" : path));
        SbxKernel k = new SbxKernel(sc);
        System.setOut(kernelStream(k, "stdout"));
        System.setErr(kernelStream(k, "stderr"));
        Signal.handle(new Signal("INT"), s -> k.exec.interrupt());
        // Warm the compiler so that the first cell does not pay for it.
        k.shell.eval(IMPORTS);
        for (SnippetEvent ev : k.shell.eval("1 + 1"))
            k.shell.drop(ev.snippet());
        k.send("Y");
        k.serve();
        System.exit(0);
    }

    // ---- environment: properties (as E2B's Java kernel sets them) and System.getenv ----

    static final class Env {
        private static final Map<String, String> LIVE = liveEnv();
        private final Map<String, String> global = new HashMap<>();

        /* The map behind System.getenv() (and ProcessBuilder's copy), writable; null when
         * this JDK does not let it be reached (only system properties change then). */
        @SuppressWarnings("unchecked")
        private static Map<String, String> liveEnv() {
            try {
                Map<String, String> env = System.getenv();
                Field f = env.getClass().getDeclaredField("m");
                f.setAccessible(true);
                return (Map<String, String>) f.get(env);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        static void forget(String k) {
            if (LIVE != null)
                LIVE.remove(k);
        }

        String get(String k) {
            String v = System.getenv(k);
            return v != null ? v : System.getProperty(k);
        }

        void set(String k, String v) {
            if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0)
                return;
            if (v == null) {
                System.clearProperty(k);
                if (LIVE != null)
                    LIVE.remove(k);
                return;
            }
            System.setProperty(k, v);
            if (LIVE != null && v.indexOf('\0') < 0)
                LIVE.put(k, v);
        }

        void applyGlobal(Map<String, Object> g) {
            for (Map.Entry<String, String> e : global.entrySet())
                if (!g.containsKey(e.getKey()) && e.getValue().equals(get(e.getKey())))
                    set(e.getKey(), null);
            global.clear();
            for (Map.Entry<String, Object> e : g.entrySet())
                if (e.getValue() instanceof String) {
                    global.put(e.getKey(), (String) e.getValue());
                    set(e.getKey(), (String) e.getValue());
                }
        }
    }

    // ---- running snippets ----

    /* Runs each snippet's code on a thread of its own so that SIGINT can stop it. */
    static final class Exec extends DirectExecutionControl {
        private volatile boolean busy, interrupted;
        private volatile Thread running;
        private Object last;
        private boolean hasLast;

        void begin() {
            interrupted = false;
            busy = true;
        }

        void end() {
            busy = false;
        }

        boolean interrupted() {
            return interrupted;
        }

        void clearLast() {
            last = null;
            hasLast = false;
        }

        boolean hasLast() {
            return hasLast;
        }

        Object last() {
            return last;
        }

        /* SIGINT: the signal dispatcher thread. */
        @SuppressWarnings("deprecation")
        void interrupt() {
            if (!busy)
                return;
            interrupted = true;
            Thread t = running;
            if (t == null)
                return;
            t.interrupt();
            Thread stopper = new Thread(() -> {
                try {
                    t.join(STOP_AFTER_MS);
                    if (t.isAlive())
                        t.stop(); // code that ignores interrupts (a busy loop)
                } catch (InterruptedException | UnsupportedOperationException e) {
                    // Newer JDKs refuse Thread.stop: the agent kills the kernel after its
                    // grace period.
                }
            }, "sbx-stopper");
            stopper.setDaemon(true);
            stopper.start();
        }

        @Override
        protected String invoke(Method doit) throws Exception {
            if (interrupted)
                throw new InvocationTargetException(new InterruptedException("interrupted"));
            Object[] value = new Object[1];
            Throwable[] failure = new Throwable[1];
            Thread t = new Thread(() -> {
                try {
                    value[0] = doit.invoke(null);
                } catch (InvocationTargetException e) {
                    failure[0] = e.getCause();
                } catch (Throwable e) {
                    failure[0] = e;
                }
            }, "main");
            t.setContextClassLoader(Thread.currentThread().getContextClassLoader());
            running = t;
            t.start();
            for (;;) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    // only SIGINT stops the snippet
                }
            }
            running = null;
            if (failure[0] != null)
                throw new InvocationTargetException(failure[0]);
            last = value[0];
            hasLast = true;
            return valueString(value[0]);
        }
    }

    static final class Provider implements ExecutionControlProvider {
        private final Exec exec;

        Provider(Exec exec) {
            this.exec = exec;
        }

        @Override
        public String name() {
            return "sbx";
        }

        @Override
        public ExecutionControl generate(ExecutionEnv env, Map<String, String> params) {
            return exec;
        }
    }

    // ---- JSON (requests in, result and error lines out) ----

    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length())
                throw new IllegalArgumentException("trailing data");
            return v;
        }

        private void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0)
                i++;
        }

        private char peek() {
            ws();
            if (i >= s.length())
                throw new IllegalArgumentException("unexpected end");
            return s.charAt(i);
        }

        private Object value() {
            char c = peek();
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                if (peek() == '}') {
                    i++;
                    return m;
                }
                for (;;) {
                    if (peek() != '"')
                        throw new IllegalArgumentException("key expected");
                    String k = string();
                    if (peek() != ':')
                        throw new IllegalArgumentException(": expected");
                    i++;
                    m.put(k, value());
                    c = peek();
                    i++;
                    if (c == '}')
                        return m;
                    if (c != ',')
                        throw new IllegalArgumentException(", expected");
                }
            }
            if (c == '[') {
                List<Object> a = new ArrayList<>();
                i++;
                if (peek() == ']') {
                    i++;
                    return a;
                }
                for (;;) {
                    a.add(value());
                    c = peek();
                    i++;
                    if (c == ']')
                        return a;
                    if (c != ',')
                        throw new IllegalArgumentException(", expected");
                }
            }
            if (c == '"')
                return string();
            int st = i;
            while (i < s.length() && "{}[],: \t\r\n\"".indexOf(s.charAt(i)) < 0)
                i++;
            String w = s.substring(st, i);
            switch (w) {
            case "true":
                return Boolean.TRUE;
            case "false":
                return Boolean.FALSE;
            case "null":
                return null;
            default:
                try {
                    return Double.valueOf(w);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad token");
                }
            }
        }

        private String string() {
            StringBuilder b = new StringBuilder();
            i++; // the opening quote
            for (;;) {
                if (i >= s.length())
                    throw new IllegalArgumentException("unterminated string");
                char c = s.charAt(i++);
                if (c == '"')
                    return b.toString();
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length())
                    throw new IllegalArgumentException("bad escape");
                char e = s.charAt(i++);
                switch (e) {
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u':
                    if (i + 4 > s.length())
                        throw new IllegalArgumentException("bad escape");
                    b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                    break;
                default: b.append(e); break;
                }
            }
        }

        @SuppressWarnings("unchecked")
        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        @SuppressWarnings("unchecked")
        private static void write(StringBuilder b, Object v) {
            if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                    if (!first)
                        b.append(',');
                    first = false;
                    quote(b, e.getKey());
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof String) {
                quote(b, (String) v);
            } else {
                b.append(String.valueOf(v));
            }
        }

        private static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else if (Character.isHighSurrogate(c) && k + 1 < s.length()
                               && Character.isLowSurrogate(s.charAt(k + 1))) {
                        b.append(c).append(s.charAt(++k));
                    } else if (Character.isSurrogate(c)) {
                        b.append('\ufffd'); // a lone surrogate has no UTF-8 form
                    } else {
                        b.append(c);
                    }
                }
            }
            b.append('"');
        }
    }
}
