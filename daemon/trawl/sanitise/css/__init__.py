"""CSS read from raw HTML, as far as it decides whether people can see an element's text.

Used by :mod:`trawl.sanitise.hidden` (the cascade and the scan): ``values`` reads declarations and colours,
``sheets`` a ``<style>`` element's rules, ``selectors`` matches them, ``names`` skips rules that cannot match,
``variables`` resolves custom properties. Dependencies run one way: values <- sheets <- variables, names;
selectors <- names.
"""
