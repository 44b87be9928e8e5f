// Sortable tables (report and explorer): click a header to sort its column; a cell's data-v holds the value
// sorted on (numbers compare as numbers, empty cells last).
(function(){
  function cellValue(td){var v=td.getAttribute('data-v');return v===null?td.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    // a header of two rows (the papers' table) names each sortable header's column in data-col
    var heads=t.querySelectorAll('th[data-col]');
    if(!heads.length)heads=t.tHead?t.tHead.rows[t.tHead.rows.length-1].cells:[];
    Array.prototype.forEach.call(heads,function(th,j){
      var i=th.hasAttribute('data-col')?parseInt(th.getAttribute('data-col'),10):j;
      th.addEventListener('click',function(){
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows),asc=th.getAttribute('data-dir')!=='asc';
        t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir');});
        th.setAttribute('data-dir',asc?'asc':'desc');
        rows.sort(function(a,b){
          var x=cellValue(a.cells[i]),y=cellValue(b.cells[i]),nx=parseFloat(x),ny=parseFloat(y),r;
          if(x===''&&y!=='')return 1; if(y===''&&x!=='')return -1;
          r=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
          return asc?r:-r;});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
})();
