// The few ncurses things Swift 6 cannot use directly: global variables (not concurrency-safe)
// and macros. Each is wrapped in a tiny static inline function.
#ifndef RECEIPTDASH_CNCURSES_SHIM_H
#define RECEIPTDASH_CNCURSES_SHIM_H

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

static inline WINDOW *rd_stdscr(void) { return stdscr; }
static inline int rd_lines(void) { return LINES; }
static inline int rd_cols(void) { return COLS; }
static inline int rd_colors(void) { return COLORS; }
static inline int rd_color_pairs(void) { return COLOR_PAIRS; }
static inline attr_t rd_a_bold(void) { return A_BOLD; }
static inline attr_t rd_a_reverse(void) { return A_REVERSE; }
static inline attr_t rd_a_dim(void) { return A_DIM; }
static inline attr_t rd_a_underline(void) { return A_UNDERLINE; }
static inline attr_t rd_a_normal(void) { return A_NORMAL; }
static inline int rd_key_resize(void) { return KEY_RESIZE; }
static inline int rd_key_f(int n) { return KEY_F(n); }
static inline void rd_set_escdelay(int ms) { set_escdelay(ms); }

/// The C library's wcwidth, which ncurses uses to place characters (declared here because the
/// C library's module hides it behind _XOPEN_SOURCE).
extern int wcwidth(wchar_t c);
static inline int rd_wcwidth(wchar_t c) { return wcwidth(c); }

/// A terminfo string capability of the current terminal, or "" when it has none.
static inline const char *rd_capability(const char *name) {
    char *value = tigetstr((NCURSES_CONST char *)name);
    return (value == NULL || value == (char *)-1) ? "" : value;
}

/// Writes one wide-character cell with attributes and a colour pair at (y, x).
static inline int rd_put_cell(int y, int x, const wchar_t *text, attr_t attrs, short pair) {
    cchar_t cell;
    if (setcchar(&cell, text, attrs, pair, NULL) != OK) return ERR;
    return mvadd_wch(y, x, &cell);
}

#endif
