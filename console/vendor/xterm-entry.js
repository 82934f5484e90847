// Bundled by esbuild at build time (console/vendor/meson.build) from Debian's node-xterm: the
// terminal emulator and its fit addon, as the global `Terminal` the console's terminal view uses.
var Terminal = require('xterm').Terminal
require('xterm/lib/addons/fit/fit').apply(Terminal)
window.Terminal = Terminal
